import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { BENCH_DEFAULTS, BENCH_HELP } from '../../src/cli/bench';
import { SERVE_DEFAULTS, SERVE_HELP } from '../../src/cli/serve';
import { HOST_DEFAULTS, SERVING_DEFAULTS } from '../../src/core/defaults';
import { DEFAULT_LIMITS } from '../../src/http/options';

// The help states the defaults the commands apply, and those of model options come from the
// library's table (SERVING_DEFAULTS where a server deliberately differs).

/** Each flag's "(default X)" in a help text (flags whose default is a sentence, "(default: ...)", are left out). */
function helpDefaults(help: string): Map<string, string> {
  const out = new Map<string, string>();
  let flag: string | undefined;
  for (const line of help.split('\n')) {
    const named = /^ {2}(?:-\w, )?--([\w-]+)/.exec(line);
    if (named !== null) flag = named[1];
    else if (!/^ {6,}\S/.test(line)) flag = undefined; // not a continuation of the flag's lines
    const stated = /\(default ([^):]+)\)\s*$/.exec(line);
    if (stated !== null && flag !== undefined) out.set(flag, stated[1] as string);
  }
  return out;
}

test.each([
  ['serve', SERVE_HELP, SERVE_DEFAULTS],
  ['bench', BENCH_HELP, BENCH_DEFAULTS],
] as const)('microbatch %s --help states the defaults its parsing applies, for every flag that has one', (_, help, defaults) => {
  const stated = helpDefaults(help);
  expect(Object.fromEntries(stated)).toEqual(Object.fromEntries(Object.entries(defaults).map(([k, v]) => [k, String(v)])));
});

test("serve's model and server defaults are the library's, or the serving ones where a server differs", () => {
  expect(SERVE_DEFAULTS['max-batch-size']).toBe(SERVING_DEFAULTS.maxBatchSize);
  expect(SERVE_DEFAULTS['max-queue-size']).toBe(SERVING_DEFAULTS.maxQueueSize);
  expect(SERVE_DEFAULTS['timeout-ms']).toBe(SERVING_DEFAULTS.timeoutMs);
  expect(SERVE_DEFAULTS['max-delay-ms']).toBe(HOST_DEFAULTS.maxDelayMs);
  expect(SERVE_DEFAULTS['max-body-bytes']).toBe(DEFAULT_LIMITS.maxBodyBytes);
});

test('--claim-idle-ms shows the default the Redis replica applies (RedisOptions.claimIdleMs)', () => {
  const file = join(__dirname, '..', '..', 'src', 'remote', 'redis', 'common.ts');
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const options = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'RedisOptions');
  const member = options?.members.find((m) => m.name?.getText(source) === 'claimIdleMs');
  const tag = member === undefined ? undefined : ts.getJSDocTags(member).find((t) => t.tagName.text === 'default');
  expect(ts.getTextOfJSDocComment(tag?.comment)).toBe(String(SERVE_DEFAULTS['claim-idle-ms']));
});
