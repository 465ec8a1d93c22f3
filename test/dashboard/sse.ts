import { request, type ClientRequest } from 'node:http';
import type { DashboardTick } from '../../src/http/dashboard/feed';

/** An open `GET /dashboard/events` stream: the ticks received so far, and a way to wait for one. */
export interface TickStream {
  readonly ticks: DashboardTick[];
  readonly headers: Record<string, string | string[] | undefined>;
  /** The first tick received (from now on or already) that satisfies `ok`. */
  until(ok: (t: DashboardTick) => boolean, timeoutMs?: number): Promise<DashboardTick>;
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

/** Opens the dashboard's event stream on 127.0.0.1:port. */
export function openTicks(port: number): Promise<TickStream> {
  return new Promise((resolve, reject) => {
    let req: ClientRequest | undefined = undefined;
    req = request({ host: '127.0.0.1', port, path: '/dashboard/events', agent: false }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`GET /dashboard/events answered ${res.statusCode}`));
        res.resume();
        return;
      }
      const ticks: DashboardTick[] = [];
      const waiters = new Set<() => void>();
      let buffered = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffered += chunk;
        let end: number;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          const event = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          const data = event.split('\n').find((l) => l.startsWith('data: '));
          if (data !== undefined) ticks.push(JSON.parse(data.slice('data: '.length)) as DashboardTick);
        }
        for (const w of [...waiters]) w();
      });
      const ended = new Promise<void>((done) => res.once('close', () => done()));
      resolve({
        ticks,
        headers: res.headers,
        ended,
        until(ok, timeoutMs = 15_000) {
          return new Promise((found, fail) => {
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`no such tick in ${timeoutMs} ms; the last: ${JSON.stringify(ticks.at(-1))}`));
            }, timeoutMs);
            function check(): void {
              const t = ticks.find(ok);
              if (t === undefined) return;
              clearTimeout(timer);
              waiters.delete(check);
              found(t);
            }
            waiters.add(check);
            check();
          });
        },
        close: () => req?.destroy(),
      });
    });
    req.on('error', reject);
    req.end();
  });
}
