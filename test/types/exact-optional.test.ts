/**
 * Hosts and remote clients are the Servables the transports take under the flags a user's project
 * has: `tsc --init` (TypeScript 5.9) sets `exactOptionalPropertyTypes` and
 * `noUncheckedIndexedAccess`, which this project's own tsconfig does not. A getter typed
 * `T | undefined` is then not an optional `T` unless the contract says `?: T | undefined`
 * (`generators: { writer: host }` and a Redis front end in `models` were rejected: TS2322).
 */
import { join } from 'node:path';
import * as ts from 'typescript';

test('hosts, remote clients and token streams are Servables under exactOptionalPropertyTypes', () => {
  const fixture = join(__dirname, 'fixtures', 'exact-optional.ts');
  const program = ts.createProgram([fixture], {
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    experimentalDecorators: true,
    module: ts.ModuleKind.CommonJS,
    target: ts.ScriptTarget.ES2022,
    types: ['node'],
    esModuleInterop: true,
    noEmit: true,
  });
  // Only the fixture's own errors: src itself is compiled with this project's flags, as dist/'s
  // declarations are what a user's project checks against.
  const errors = ts.getPreEmitDiagnostics(program, program.getSourceFile(fixture)).map((d) => {
    const where = d.file ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : '';
    return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
  expect(errors).toEqual([]);
});
