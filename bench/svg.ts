/** A small hand-written SVG line chart (no plotting dependency). */

export interface Series {
  readonly name: string;
  readonly color: string;
  readonly points: ReadonlyArray<readonly [number, number]>;
  /** Dashed line (for a secondary measure such as p50). */
  readonly dashed?: boolean;
  /** Spread of each point over repetitions, drawn as a vertical bar: `[x, low, high]`. */
  readonly range?: ReadonlyArray<readonly [number, number, number]>;
  /** Listed in the legend (leave the secondary measure of a setting out: `legendNotes` explains it). */
  readonly legend?: boolean;
}

export interface ChartOptions {
  readonly title: string;
  readonly subtitle?: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly xMin: number;
  readonly xMax: number;
  readonly xTicks: readonly number[];
  /** Log-10 y axis (latencies spanning orders of magnitude). */
  readonly yLog: boolean;
  readonly width?: number;
  readonly height?: number;
  /** Lines under the legend that explain line styles (e.g. "solid: p99, dashed: p50"). */
  readonly legendNotes?: readonly string[];
  /** Lines under the plot: the machine, its load, how many repetitions each point is. */
  readonly caption?: readonly string[];
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceLogTicks(min: number, max: number): number[] {
  const ticks: number[] = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= min * 0.999 && v <= max * 1.001) ticks.push(v);
    }
  }
  return ticks;
}

function niceLinearTicks(min: number, max: number): number[] {
  const span = max - min || 1;
  const step0 = 10 ** Math.floor(Math.log10(span / 5));
  const step = [1, 2, 5, 10].map((k) => k * step0).find((s) => span / s <= 6) ?? step0 * 10;
  const ticks: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

const label = (v: number): string => (v >= 1000 ? `${v / 1000}k` : v >= 1 ? String(v) : String(Number(v.toPrecision(2))));

/** Renders the series as an SVG document. */
export function lineChart(series: readonly Series[], o: ChartOptions): string {
  const listed = series.filter((s) => s.legend !== false);
  // Sized from the longest legend line (about 7 px per character at 12 px), so no label is clipped.
  const legendChars = Math.max(0, ...listed.map((s) => s.name.length + 5), ...(o.legendNotes ?? []).map((n) => n.length));
  const caption = o.caption ?? [];
  const W = (o.width ?? 760) + Math.max(0, legendChars * 7 + 40 - 190);
  const H = (o.height ?? 460) + caption.length * 16;
  const m = { left: 70, right: Math.max(190, legendChars * 7 + 40), top: o.subtitle === undefined ? 40 : 58, bottom: 54 + caption.length * 16 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const ys = series
    .flatMap((s) => [...s.points.map((p) => p[1]), ...(s.range ?? []).flatMap((r) => [r[1], r[2]])])
    .filter((v) => Number.isFinite(v) && (!o.yLog || v > 0));
  let yMin = Math.min(...ys);
  let yMax = Math.max(...ys);
  if (o.yLog) {
    yMin = 10 ** Math.floor(Math.log10(yMin));
    yMax = 10 ** Math.ceil(Math.log10(yMax));
  } else {
    yMin = Math.min(0, yMin);
    yMax = yMax * 1.1;
  }
  const x = (v: number): number => m.left + ((v - o.xMin) / (o.xMax - o.xMin)) * pw;
  const y = (v: number): number =>
    o.yLog ? m.top + ph - ((Math.log10(v) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) * ph : m.top + ph - ((v - yMin) / (yMax - yMin)) * ph;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${m.left}" y="22" font-size="15" font-weight="bold">${esc(o.title)}</text>`);
  if (o.subtitle !== undefined) out.push(`<text x="${m.left}" y="40" fill="#555">${esc(o.subtitle)}</text>`);
  // grid and ticks
  for (const t of o.yLog ? niceLogTicks(yMin, yMax) : niceLinearTicks(yMin, yMax)) {
    const yy = y(t).toFixed(1);
    out.push(`<line x1="${m.left}" y1="${yy}" x2="${m.left + pw}" y2="${yy}" stroke="#e3e3e3"/>`);
    out.push(`<text x="${m.left - 6}" y="${yy}" text-anchor="end" dominant-baseline="middle" fill="#333">${label(t)}</text>`);
  }
  for (const t of o.xTicks) {
    const xx = x(t).toFixed(1);
    out.push(`<line x1="${xx}" y1="${m.top}" x2="${xx}" y2="${m.top + ph}" stroke="#f0f0f0"/>`);
    out.push(`<text x="${xx}" y="${m.top + ph + 16}" text-anchor="middle" fill="#333">${label(t)}</text>`);
  }
  out.push(`<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>`);
  out.push(`<text x="${m.left + pw / 2}" y="${m.top + ph + 36}" text-anchor="middle">${esc(o.xLabel)}</text>`);
  caption.forEach((line, i) => out.push(`<text x="${m.left}" y="${m.top + ph + 58 + i * 16}" fill="#555" font-size="11">${esc(line)}</text>`));
  out.push(`<text transform="translate(18 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`);
  // series
  series.forEach((s) => {
    const pts = s.points.filter((p) => Number.isFinite(p[1]) && (!o.yLog || p[1] > 0));
    const d = pts.map((p, k) => `${k === 0 ? 'M' : 'L'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ');
    const dash = s.dashed === true ? ' stroke-dasharray="5 4"' : '';
    for (const [rx, lo, hi] of s.range ?? []) {
      if (!(Number.isFinite(lo) && Number.isFinite(hi)) || (o.yLog && lo <= 0)) continue;
      const xx = x(rx);
      const a = y(lo).toFixed(1);
      const b = y(hi).toFixed(1);
      out.push(`<path d="M${xx.toFixed(1)},${a} L${xx.toFixed(1)},${b} M${(xx - 3).toFixed(1)},${a} L${(xx + 3).toFixed(1)},${a} M${(xx - 3).toFixed(1)},${b} L${(xx + 3).toFixed(1)},${b}" stroke="${s.color}" stroke-opacity="0.55" stroke-width="1.2" fill="none"/>`);
    }
    out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="${s.dashed === true ? 1.5 : 2.2}"${dash}/>`);
    if (s.dashed !== true) for (const p of pts) out.push(`<circle cx="${x(p[0]).toFixed(1)}" cy="${y(p[1]).toFixed(1)}" r="3" fill="${s.color}"/>`);
  });
  const lx = m.left + pw + 16;
  listed.forEach((s, i) => {
    const ly = m.top + 8 + i * 20;
    const dash = s.dashed === true ? ' stroke-dasharray="5 4"' : '';
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${s.color}" stroke-width="2.2"${dash}/>`);
    out.push(`<text x="${lx + 30}" y="${ly}" dominant-baseline="middle">${esc(s.name)}</text>`);
  });
  (o.legendNotes ?? []).forEach((note, i) => {
    out.push(`<text x="${lx}" y="${m.top + 8 + (listed.length + 0.6 + i) * 20}" dominant-baseline="middle" fill="#555">${esc(note)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
