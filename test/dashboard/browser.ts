/**
 * Debian's Chromium, driven headless through playwright-core (which downloads nothing: it is
 * pointed at the system browser). Under CI it must be there (.ci/run installs it); elsewhere the
 * browser tests skip with a message saying how to get it, as the Redis tests do for redis-server.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { describeWith } from '../support/describe-with';

/** Where Debian's `chromium` package puts the browser; `CHROMIUM_PATH` overrides it. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or undefined when they can. */
export function chromiumUnavailable(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (Debian: apt-get install -y chromium)`;
}

/** `describe` when Chromium exists; under CI a missing browser fails instead of skipping. */
export function describeWithChromium(name: string, body: () => void): void {
  describeWith(name, chromiumUnavailable(), body);
}

/** A headless Chromium (no sandbox: the tests may run as root in a container). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}
