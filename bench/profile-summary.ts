/**
 * Summarises V8 `.cpuprofile` files (from `node --cpu-prof`): the share of samples per category
 * (idle, GC, HTTP parsing, the body, decoding, the engine, the worker hand-off, encoding, writing,
 * the model), each sample put where its nearest frame of a known kind says, leaf first. Used for
 * the served path's breakdown in docs/performance.md (bench/served.ts with SERVED_PROF=<dir>).
 *
 *   npx ts-node --transpile-only bench/profile-summary.ts /tmp/prof/*.cpuprofile
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly children?: readonly number[];
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
  readonly startTime: number;
  readonly endTime: number;
}

/** [category, test on a frame], tried in order on each frame from the leaf up. */
const RULES: ReadonlyArray<readonly [string, (fn: string, url: string) => boolean]> = [
  ['idle', (fn) => fn === '(idle)'],
  ['GC', (fn) => fn === '(garbage collector)'],
  ['model (onnxruntime run)', (fn, url) => url.includes('onnxruntime') || fn === 'run' && url.includes('onnx')],
  ['worker hand-off (postMessage, transfer, messages)', (fn, url) => /executors\/worker|worker_threads|internal\/worker|structuredClone|postMessage/.test(url + fn)],
  ['decode (request body → tensors)', (_, url) => /serving\/(decode-request|raw-data|json-data)|http\/infer/.test(url)],
  ['encode (outputs → response)', (_, url) => /(serving|http)\/encode-response/.test(url)],
  ['body read', (_, url) => /http\/read-body/.test(url)],
  ['respond/write', (_, url) => /http\/respond|_http_outgoing|internal\/stream_base_commons|node:net/.test(url)],
  ['HTTP parse (node:_http_server, llhttp)', (fn, url) => /_http_server|_http_common|_http_incoming/.test(url) || fn === 'parserOnHeadersComplete' || fn === 'parserOnMessageComplete' || fn === 'execute'],
  ['serving/http layer (routing, admission, server)', (_, url) => /src\/(http|serving)\//.test(url) || /dist\/(http|serving)\//.test(url)],
  ['engine (queue, batch forming, settle)', (_, url) => /(src|dist)\/(engine|core|batchers)\//.test(url)],
  ['onnx glue', (_, url) => /(src|dist)\/onnx\//.test(url)],
  ['streams/events/timers (node internals)', (_, url) => url.startsWith('node:')],
];

function summarize(file: string): void {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const cache = new Map<number, string>();
  const categoryOf = (id: number): string => {
    const hit = cache.get(id);
    if (hit !== undefined) return hit;
    let cat = 'other (program, native)';
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { functionName, url } = byId.get(at)!.callFrame;
      const rule = RULES.find(([, test]) => test(functionName, url));
      if (rule !== undefined) {
        cat = rule[0];
        break;
      }
    }
    cache.set(id, cat);
    return cat;
  };
  const totals = new Map<string, number>();
  const self = new Map<string, number>();
  let all = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    all += dt;
    const cat = categoryOf(id);
    totals.set(cat, (totals.get(cat) ?? 0) + dt);
    const { functionName, url } = byId.get(id)!.callFrame;
    const key = `${functionName || '(anonymous)'} ${url === '' ? '' : basename(url)}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  });
  const pct = (v: number): string => `${((100 * v) / all).toFixed(1)}%`;
  console.log(`\n${basename(file)}: ${(all / 1e6).toFixed(2)} s sampled`);
  for (const [cat, v] of [...totals].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(v).padStart(6)}  ${cat}`);
  console.log('  top self time:');
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${pct(v).padStart(6)}  ${k}`);
}

for (const f of process.argv.slice(2)) summarize(f);
