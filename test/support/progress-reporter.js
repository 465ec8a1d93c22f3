// A jest reporter that keeps a long run from looking hung. Jest's default reporter prints a file's
// results only when the whole file ends, and off a terminal (CI) it shows nothing in between: the
// examples file alone runs for over a minute. This one stays quiet while output flows, and after
// HEARTBEAT_MS without any says which files are still running and how far each has got.
const HEARTBEAT_MS = 30_000;

class ProgressReporter {
  constructor() {
    /** @type {Map<string, { started: number, done: number, total: number | undefined, last: string | undefined }>} */
    this.running = new Map();
    this.lastOutput = Date.now();
    this.timer = undefined;
  }

  onRunStart() {
    this.timer = setInterval(() => this.heartbeat(), 5_000);
    this.timer.unref();
  }

  onTestFileStart(test) {
    this.running.set(test.path, { started: Date.now(), done: 0, total: undefined, last: undefined });
  }

  onTestCaseResult(test, result) {
    const file = this.running.get(test.path);
    if (file === undefined) return;
    file.done++;
    file.last = `${result.status === 'passed' ? '✓' : result.status === 'failed' ? '✗' : '-'} ${result.title}`;
  }

  onTestFileResult(test) {
    this.running.delete(test.path);
    this.lastOutput = Date.now(); // the default reporter prints the file's result now
  }

  onRunComplete() {
    clearInterval(this.timer);
  }

  heartbeat() {
    const now = Date.now();
    if (now - this.lastOutput < HEARTBEAT_MS || this.running.size === 0) return;
    this.lastOutput = now;
    const root = process.cwd() + '/';
    const lines = [...this.running].map(([path, f]) => {
      const secs = ((now - f.started) / 1000).toFixed(0);
      return `  ${path.replace(root, '')}: ${f.done} test${f.done === 1 ? '' : 's'} done in ${secs} s${f.last === undefined ? '' : `, last: ${f.last}`}`;
    });
    process.stderr.write(`[microbatch] still running:\n${lines.join('\n')}\n`);
  }
}

module.exports = ProgressReporter;
