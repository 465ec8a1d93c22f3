/**
 * This package's version, as `package.json` says (what `microbatch --version` prints and
 * `GET /v2` reports). In core, below both, so that the CLI reads it without loading the serving core.
 * @internal
 */
export function packageVersion(): string {
  // Two levels up from both src/<dir> and dist/<dir>; read at run time so it is never stale.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- read at run time, not bundled
  return (require('../../package.json') as { version: string }).version;
}
