/**
 * Names that moved from the root to the subpath of their concern stay importable from the root
 * for one release: each root name must be the subpath's own declaration (not a copy) and carry
 * `@deprecated` naming that subpath, and every root name of the previous release must still be
 * there. Read through the TypeScript compiler API, so types are checked as well as values.
 */
import { join } from 'node:path';
import * as ts from 'typescript';

const src = join(__dirname, '..', '..', 'src');
/** The root's names before the names moved to subpaths (0.1.0), which must all still resolve. */
const MOVED: ReadonlyArray<readonly [file: string, subpath: string, names: readonly string[]]> = [
  ['batchers/index.ts', 'microbatch/batchers', ['BucketBatcherOptions', 'ConcatBatcherOptions', 'ConcatContext', 'DictBatcherOptions', 'DictContext', 'KeyAxis', 'ListBatcherOptions', 'PadBatcherOptions', 'PadContext', 'PadInput', 'PadValue', 'Shape', 'TENSOR_TYPES', 'TensorData', 'TensorFactory', 'TensorInput', 'TensorRecord', 'TensorType', 'TypedArray', 'isTensorLike', 'isTensorType']],
  ['core/policies.ts', 'microbatch/policy', ['AdaptivePolicyOptions', 'AdaptiveStats', 'BatchOutcome', 'LatencyModelOptions', 'LatencyModelState', 'LatencyModelView', 'QueuedRequestInfo', 'ReleaseDecision', 'ReleaseReason', 'SizeEstimate']],
  ['api/generate.ts', 'microbatch/generate', ['CreateGenerationHostOptions', 'DecoderBatcherOptions', 'DecoderContext', 'FinishReason', 'GenerateOptions', 'Generating', 'GeneratingOptions', 'GenerationObserver', 'GenerationOptions', 'GenerationStats', 'PrefillInput', 'SequenceEvent', 'SequenceOutcome', 'StateOf', 'StepEvent', 'WorkerGenerationHost', 'WorkerGenerationOptions', 'asGenerating']],
  ['api/worker.ts', 'microbatch/worker', ['WorkerBatchObject', 'WorkerExecutorOptions', 'WorkerExecutorStats', 'WorkerFactory', 'WorkerHostOptions']],
  ['remote/socket/index.ts', 'microbatch/socket', ['ConnectHostOptions', 'InferenceTarget', 'ServeHostOptions', 'SocketHostClient', 'SocketHostServer']],
];

const files = [join(src, 'index.ts'), ...MOVED.map(([f]) => join(src, f))];
const program = ts.createProgram(files, { experimentalDecorators: true, module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, skipLibCheck: true, noEmit: true });
const checker = program.getTypeChecker();

function exportsOf(file: string): Map<string, ts.Symbol> {
  const source = program.getSourceFile(file);
  if (source === undefined) throw new Error(`no source file ${file}`);
  const module = checker.getSymbolAtLocation(source) as ts.Symbol;
  return new Map(checker.getExportsOfModule(module).map((s) => [s.name, s]));
}
const resolve = (s: ts.Symbol): ts.Symbol => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
const root = exportsOf(join(src, 'index.ts'));

describe.each(MOVED)('root names that moved to %s (%s)', (file, subpath, names) => {
  const sub = exportsOf(join(src, file));
  test.each(names)('%s', (name) => {
    const r = root.get(name);
    const s = sub.get(name);
    expect(r).toBeDefined();
    expect(s).toBeDefined();
    expect(resolve(r as ts.Symbol)).toBe(resolve(s as ts.Symbol));
    const tag = (r as ts.Symbol).getJsDocTags(checker).find((t) => t.name === 'deprecated');
    expect(ts.displayPartsToString(tag?.text)).toContain(subpath);
  });
});
