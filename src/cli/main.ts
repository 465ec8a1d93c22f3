/**
 * The `microbatch` command line: `microbatch serve <model.onnx | dir>` serves a model (or a Triton
 * model repository) over HTTP with dynamic batching, `microbatch bench <model.onnx>` profiles it
 * per batch size.
 * @packageDocumentation
 */
import { packageVersion } from '../core/package-version';
import { UsageError } from './args';
import { bench, BENCH_HELP } from './bench';
import { processIo, type Io } from './io';
import { serve, SERVE_HELP } from './serve';

/** `microbatch --help`. */
export const MAIN_HELP = `Usage: microbatch <command> [options]

Commands:
  serve <model.onnx>   serve an ONNX model over HTTP with dynamic batching (KServe v2 protocol);
                       serve <dir> serves a Triton model repository
  bench <model.onnx>   measure latency per batch size and recommend maxBatchSize / maxDelayMs

Options:
  -h, --help           show this help (or a command's: microbatch serve --help)
  -v, --version        print the version
`;


/**
 * Runs the CLI with `argv` (without `node` and the script) and resolves with the exit code: 0 on
 * success, 1 when the work failed (a model that will not load), 2 for a usage mistake.
 * `undefined` means the command keeps running (a server): the process ends on a signal.
 *
 * @example
 * ```ts
 * process.exitCode = await run(['bench', 'model.onnx', '--seconds', '2']);
 * ```
 */
export async function run(argv: readonly string[], io: Io = processIo): Promise<number | undefined> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        return await serve(rest, io);
      case 'bench':
        return await bench(rest, io);
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        io.out(MAIN_HELP);
        return command === undefined ? 2 : 0;
      case '-v':
      case '--version':
        io.out(`${packageVersion()}\n`);
        return 0;
      default:
        throw new UsageError(`microbatch: unknown command ${JSON.stringify(command)}; the commands are serve and bench`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      const help = command === 'serve' ? SERVE_HELP : command === 'bench' ? BENCH_HELP : MAIN_HELP;
      io.err(`${e.message}\n\n${help.split('\n')[0] as string}\nRun with --help for the options.`);
      return 2;
    }
    io.err(`microbatch ${command}: ${(e as Error)?.message ?? String(e)}`);
    return 1;
  }
}

if (require.main === module) {
  // run() turns every failure into an exit code, so this promise does not reject.
  void run(process.argv.slice(2)).then((code) => {
    if (code !== undefined) process.exit(code);
  });
}
