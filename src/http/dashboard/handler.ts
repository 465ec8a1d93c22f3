import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe } from '../../core/describe';
import type { ServingRegistry, StatsCollector } from '../../serving';
import { send, sendJson } from '../respond';
import { dashboardAsset } from './assets';
import { DashboardFeed } from './feed';

/** What the server hands the dashboard: what it serves, and the statistics `/stats` answers from. @internal */
export interface DashboardSources {
  readonly registry: ServingRegistry;
  readonly stats: StatsCollector;
  /** How often the page is updated. @default 1000 */
  readonly intervalMs?: number;
}

/** The dashboard's routes, mounted by the server. @internal */
export interface Dashboard {
  /** Answers a `/dashboard` request and returns true; returns false for any other path. */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  /** Ends every open stream (the pages reconnect to whatever serves next) and stops the ticks. */
  close(): void;
}

/**
 * The dashboard `createInferenceServer` mounts for its `dashboard` option (`true`), or `undefined`
 * (`false`, absent); throws a TypeError naming what came for anything else.
 * @internal
 */
export function dashboardOption(where: string, option: unknown, sources: DashboardSources): Dashboard | undefined {
  if (option === undefined || option === false) return undefined;
  if (option !== true) throw new TypeError(`${where}: expected \`dashboard\` to be true or false, got ${describe(option)}`);
  return createDashboard(sources);
}

/** Pages one server streams to at once: a bound on what a forgotten tab loop can cost. */
export const MAX_DASHBOARD_STREAMS = 64;

// Everything the page loads comes from this server: nothing from outside, no inline script.
const PAGE_HEADERS = {
  'Content-Security-Policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-cache',
};

/** A stream whose client reads slower than this many bytes behind is dropped (its page reconnects). */
const MAX_BUFFERED_BYTES = 1 << 20;

/**
 * `GET /dashboard` (the page), its scripts and styles, and `GET /dashboard/events`: one
 * Server-Sent Event per tick (`data:` a JSON {@link DashboardTick}), shared by every open page.
 * The hosts' events are listened to only while a stream is open.
 * @internal
 */
export function createDashboard(sources: DashboardSources): Dashboard {
  const feed = new DashboardFeed(sources.registry, sources.stats);
  const intervalMs = sources.intervalMs ?? 1000;
  const streams = new Map<ServerResponse, () => void>();
  let timer: NodeJS.Timeout | undefined;
  let last = '';

  function broadcast(): void {
    last = `data: ${JSON.stringify(feed.tick())}\n\n`;
    for (const res of streams.keys()) {
      if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
      else res.write(last);
    }
  }

  function drop(res: ServerResponse): void {
    const unwatch = streams.get(res);
    if (unwatch === undefined) return;
    streams.delete(res);
    unwatch();
    if (streams.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  }

  function stream(req: IncomingMessage, res: ServerResponse): void {
    if (streams.size >= MAX_DASHBOARD_STREAMS) {
      sendJson(res, 503, { error: `the dashboard streams to at most ${MAX_DASHBOARD_STREAMS} pages at once; close one`, code: 'too_many_streams' }, { 'Retry-After': '5' });
      return;
    }
    const first = streams.size === 0;
    streams.set(res, feed.watch());
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
    // The page reconnects a second after the stream ends (a restart), and gets the current totals at once.
    res.write(`retry: 1000\n\n${first || last === '' ? `data: ${JSON.stringify(feed.tick())}\n\n` : last}`);
    if (first) {
      timer = setInterval(broadcast, intervalMs);
      timer.unref();
    }
    req.once('close', () => drop(res));
    res.once('close', () => drop(res));
  }

  return {
    handle(req, res) {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q >= 0 ? url.slice(0, q) : url;
      if (path !== '/dashboard' && !path.startsWith('/dashboard/')) return false;
      if (path === '/dashboard' && (req.method === 'GET' || req.method === 'HEAD')) {
        // The page loads its files by relative URLs (so it works wherever the server is mounted): from the folder.
        send(res, 308, { Location: 'dashboard/' }, '');
        return true;
      }
      const name = path.slice('/dashboard/'.length);
      const isEvents = name === 'events';
      const asset = isEvents ? undefined : dashboardAsset(name);
      if (!isEvents && asset === undefined) return false; // the server's own 404
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendJson(res, 405, { error: `${req.method} is not allowed on ${path}; use GET`, code: 'method_not_allowed' }, { Allow: 'GET, HEAD' });
        return true;
      }
      if (isEvents && req.method === 'HEAD') send(res, 200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' }, ''); // no stream to hold open
      else if (isEvents) stream(req, res);
      else if (asset !== undefined) send(res, 200, { ...PAGE_HEADERS, 'Content-Type': asset.type }, asset.body); // node:http sends no body to HEAD
      return true;
    },
    close() {
      for (const res of [...streams.keys()]) {
        drop(res);
        res.end();
      }
    },
  };
}
