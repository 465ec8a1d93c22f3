import { extname, join } from 'node:path';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import type { WorkerBoot } from './protocol';

/** Extensions that need ts-node in the worker: Node's worker threads load JavaScript only. */
const TS_EXTENSIONS = new Set(['.ts', '.cts', '.mts', '.tsx']);

/** How the worker threads of one executor are started. @internal */
export interface SpawnPlan {
  /** This package's worker entry (`worker-main.js`, or `.ts` when running from sources). */
  readonly entry: string;
  /** ts-node's transpile-only register, when the entry or the module is TypeScript. */
  readonly register: string | undefined;
  readonly resourceLimits: ResourceLimits | undefined;
}

/**
 * Resolves the user's module to an absolute path, from the current directory (absolute paths
 * resolve to themselves, with Node's extension lookup). Throws Node's own "Cannot find module".
 * @internal
 */
export function resolveWorkerModule(id: string): string {
  return require.resolve(id, { paths: [process.cwd()] });
}

/**
 * Plans the spawn: the worker entry sits next to this file with this file's extension, so a
 * compiled package uses `worker-main.js`, and ts-jest or ts-node running the sources use
 * `worker-main.ts`, which (like a `.ts` user module) needs ts-node inside the worker.
 * @internal
 */
export function planSpawn(modulePath: string, resourceLimits: ResourceLimits | undefined, loadsTypeScript = false): SpawnPlan {
  const ext = extname(__filename);
  const entry = join(__dirname, `worker-main${ext}`);
  const needsTs = loadsTypeScript || TS_EXTENSIONS.has(ext) || TS_EXTENSIONS.has(extname(modulePath));
  let register: string | undefined;
  if (needsTs) {
    try {
      register = require.resolve('ts-node/register/transpile-only', { paths: [process.cwd(), __dirname] });
    } catch (e) {
      throw new Error(
        `the worker module ${modulePath} is TypeScript, and worker threads load JavaScript only: install ts-node ` +
          '(it is loaded in each worker with its transpile-only register), or compile the module and point `module` at the .js file',
        { cause: e },
      );
    }
  }
  return { entry, register, resourceLimits };
}

// Registers ts-node (when needed) before loading the entry. An eval'd bootstrap rather than
// `execArgv: ['-r', ...]`, which depends on which flags a worker accepts.
const BOOTSTRAP = `const { workerData } = require('node:worker_threads');
if (workerData.register !== undefined) require(workerData.register);
require(workerData.entry);`;

/** Starts one worker thread. @internal */
export function spawnWorker(plan: SpawnPlan, boot: WorkerBoot, threadName: string): Worker {
  const workerData = { ...boot, entry: plan.entry, register: plan.register };
  const options = {
    workerData,
    name: threadName,
    ...(plan.resourceLimits !== undefined ? { resourceLimits: plan.resourceLimits } : {}),
  };
  return plan.register === undefined ? new Worker(plan.entry, options) : new Worker(BOOTSTRAP, { ...options, eval: true });
}
