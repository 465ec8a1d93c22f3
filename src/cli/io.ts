/** Where the CLI writes: stdout for results, stderr for progress and messages. @internal */
export interface Io {
  /** Writes to stdout as is. */
  out(text: string): void;
  /** Writes a line to stderr. */
  err(line: string): void;
  /** Rewrites the current stderr line (a progress line); only called when `tty` is true. */
  status(line: string): void;
  /** True when stderr is a terminal (live progress); otherwise one line per step. */
  readonly tty: boolean;
}

/** The process's own streams. @internal */
export const processIo: Io = {
  out: (text) => void process.stdout.write(text),
  err: (line) => void process.stderr.write(`${line}\n`),
  status: (line) => void process.stderr.write(`\r\x1b[2K${line}`),
  tty: process.stderr.isTTY === true,
};
