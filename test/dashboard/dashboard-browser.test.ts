import type { Browser, Page } from 'playwright-core';
import { call } from '../http/helpers';
import { describeWithChromium, launchChromium } from './browser';
import { bucketed, load, metricsHistogram, sample, serveLinear, type Served, useLinearModel } from './served';

// The dashboard in a real browser: Debian's Chromium, headless, reading the page and its stream
// from a real server with a real ONNX model, its numbers checked against /metrics.

// The page's `document`, as far as the functions these tests run in the page use it (tsconfig has no DOM lib).
declare const document: { querySelector(selector: string): { readonly textContent: string | null; getAttribute(name: string): string | null } | null };

const linear = useLinearModel();
let browser: Browser;

/** Waits until `[data-model=model] [data-field=name]` reads `want` (the page updates once a second). */
async function field(page: Page, model: string, name: string, want: string): Promise<string> {
  const sel = `[data-model="${model}"] [data-field="${name}"]`;
  await page.waitForFunction(({ sel, want }) => document.querySelector(sel)?.textContent === want, { sel, want }, { timeout: 15_000 });
  return (await page.textContent(sel)) ?? '';
}

describeWithChromium('the dashboard in headless Chromium', () => {
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  test('names the served models, and after 200 requests shows 200 and the batch histogram /metrics shows', async () => {
    const served = await serveLinear(linear(), 'linear');
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    try {
      const answer = await page.goto(`http://127.0.0.1:${served.port}/dashboard`);
      expect(answer?.status()).toBe(200);
      expect(page.url()).toBe(`http://127.0.0.1:${served.port}/dashboard/`);
      expect(await field(page, 'linear', 'name', 'linear')).toBe('linear');
      expect(await page.getAttribute('#status', 'data-state')).toBe('live');
      await load(served.port, 'linear', 200);
      expect(await field(page, 'linear', 'requests', '200')).toBe('200');
      const metrics = (await call(served.port, 'GET', '/metrics')).text;
      expect(sample(metrics, 'microbatch_requests_total', 'host="linear",outcome="ok"')).toBe(200);
      // Every batch has reached the page once its batches total equals /metrics' count.
      const count = sample(metrics, 'microbatch_batch_size_count', 'host="linear"');
      await field(page, 'linear', 'batches', String(count));
      const bySize = await page.$$eval('[data-model="linear"] [data-field="batch-sizes"] tr[data-size]', (rows) =>
        rows.map((r) => [Number(r.getAttribute('data-size')), Number(r.querySelector('[data-count]')?.textContent)] as const),
      );
      const histogram = metricsHistogram(metrics, 'linear');
      expect(histogram.length).toBeGreaterThan(1);
      expect(bucketed(bySize, histogram.map(([le]) => le))).toEqual(histogram);
      expect(bySize.reduce((n, [size, c]) => n + size * c, 0)).toBe(sample(metrics, 'microbatch_batch_size_sum', 'host="linear"'));
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      await served.server.close();
    }
  }, 60_000);

  test('the stream reconnects after the server restarts on the same port', async () => {
    let served: Served = await serveLinear(linear(), 'first');
    const port = served.port;
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${port}/dashboard/`);
      await field(page, 'first', 'name', 'first');
      expect(await page.getAttribute('#status', 'data-connects')).toBe('1');
      await served.server.close();
      await page.waitForFunction(() => document.querySelector('#status')?.getAttribute('data-state') === 'reconnecting', undefined, { timeout: 15_000 });
      served = await serveLinear(linear(), 'second', port);
      // The same page, without a reload, now shows the new server's model, and drops the old one.
      await field(page, 'second', 'name', 'second');
      expect(await page.getAttribute('#status', 'data-state')).toBe('live');
      expect(Number(await page.getAttribute('#status', 'data-connects'))).toBeGreaterThanOrEqual(2);
      expect(await page.$('[data-model="first"]')).toBeNull();
    } finally {
      await page.close();
      await served.server.close();
    }
  }, 60_000);
});
