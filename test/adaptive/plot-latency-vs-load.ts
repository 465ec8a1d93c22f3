/**
 * Draws `docs/adaptive-latency-vs-load.svg`: p99 latency against load for greedy, fixed batching
 * windows and the adaptive policy, from the same simulation as `simulation.test.ts` (fake clock,
 * seeded Poisson arrivals, a model costing a + b·rows). Run: `npx ts-node test/adaptive/plot-latency-vs-load.ts`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { poissonArrivals, rateForLoad, simulate, type SimModel, type SimPolicy } from './simulation';

const MODEL: SimModel = { a: 5, b: 0.5, maxBatchSize: 32, maxLatencyMs: 100 };
const LOADS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95];
const SERIES: Array<{ label: string; policy: SimPolicy; color: string; dash?: string }> = [
  { label: 'greedy (maxDelayMs 0)', policy: { kind: 'fixed', maxDelayMs: 0 }, color: '#1f77b4' },
  { label: 'fixed maxDelayMs 5', policy: { kind: 'fixed', maxDelayMs: 5 }, color: '#ff7f0e', dash: '6 3' },
  { label: 'fixed maxDelayMs 10', policy: { kind: 'fixed', maxDelayMs: 10 }, color: '#9467bd', dash: '2 3' },
  { label: 'fixed maxDelayMs 20', policy: { kind: 'fixed', maxDelayMs: 20 }, color: '#8c564b', dash: '8 3 2 3' },
  { label: 'adaptive (maxLatencyMs 100)', policy: { kind: 'adaptive' }, color: '#d62728' },
];

async function main(): Promise<void> {
  const rows: number[][] = SERIES.map(() => []);
  for (const load of LOADS) {
    const arrivals = poissonArrivals(rateForLoad(MODEL, load), 4000, 7);
    for (let s = 0; s < SERIES.length; s++) {
      const r = await simulate(MODEL, (SERIES[s] as (typeof SERIES)[number]).policy, arrivals);
      (rows[s] as number[]).push(r.p99);
      console.log(`load ${load} ${(SERIES[s] as (typeof SERIES)[number]).label}: p99 ${r.p99.toFixed(2)} ms, shed ${r.shed}`);
    }
  }
  const W = 640;
  const H = 400;
  const L = 60;
  const R = 20;
  const T = 40;
  const B = 50;
  const yMax = Math.ceil(Math.max(...rows.flat()) / 10) * 10;
  const x = (load: number) => L + (load / 1) * (W - L - R);
  const y = (ms: number) => H - B - (ms / yMax) * (H - T - B);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">p99 latency vs load (simulated: ${MODEL.a} ms + ${MODEL.b} ms/row, maxBatchSize ${MODEL.maxBatchSize})</text>`,
  );
  for (let ms = 0; ms <= yMax; ms += 10) {
    out.push(`<line x1="${L}" x2="${W - R}" y1="${y(ms)}" y2="${y(ms)}" stroke="#eee"/>`);
    out.push(`<text x="${L - 6}" y="${y(ms) + 4}" text-anchor="end">${ms}</text>`);
  }
  for (let l = 0; l <= 10; l++) out.push(`<text x="${x(l / 10)}" y="${H - B + 16}" text-anchor="middle">${l * 10}%</text>`);
  out.push(`<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#333"/><line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="#333"/>`);
  out.push(`<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">load (fraction of full-batch throughput)</text>`);
  out.push(`<text transform="translate(16 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">p99 latency (ms)</text>`);
  SERIES.forEach((s, i) => {
    const pts = LOADS.map((load, j) => `${x(load).toFixed(1)},${y((rows[i] as number[])[j] as number).toFixed(1)}`).join(' ');
    out.push(`<polyline points="${pts}" fill="none" stroke="${s.color}" stroke-width="${s.policy.kind === 'adaptive' ? 2.5 : 1.5}"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`);
    out.push(`<line x1="${L + 14}" x2="${L + 44}" y1="${T + 8 + i * 16}" y2="${T + 8 + i * 16}" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`);
    out.push(`<text x="${L + 50}" y="${T + 12 + i * 16}">${s.label}</text>`);
  });
  out.push('</svg>');
  const file = join(__dirname, '..', '..', 'docs', 'adaptive-latency-vs-load.svg');
  writeFileSync(file, out.join('\n') + '\n');
  console.log(`wrote ${file}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
