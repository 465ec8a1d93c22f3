/**
 * `describe` for tests that need a program from the system (redis-server, Chromium): `why` says
 * why it cannot run here (undefined when it can). Under CI a missing program fails the suite
 * instead of skipping it (CI installs it); elsewhere the tests skip with that message.
 */
export function describeWith(name: string, why: string | undefined, body: () => void): void {
  if (why === undefined) {
    describe(name, body);
  } else if (process.env.CI === 'true') {
    describe(name, () => test(`${name}: what it needs is installed`, () => {
      throw new Error(`${why}: CI must install it (.ci/run does)`);
    }));
  } else {
    describe.skip(`${name} (skipped: ${why})`, body);
  }
}
