import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

/** What `serve --watch` needs from the served model. @internal */
export interface ReloadableModel {
  readonly name: string;
  readonly version: string;
  reload(modelPath: string): Promise<void>;
}

/** A running watch; `close()` stops it and waits for a reload in progress. @internal */
export interface ModelWatch {
  close(): Promise<void>;
}

/** The identity of a file's content as far as stat can tell: a replaced or rewritten file changes it. */
async function signature(path: string): Promise<string | undefined> {
  try {
    const s = await stat(path); // follows symlinks, so a swapped link target counts as a change
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return undefined; // missing for a moment while a deploy tool replaces it
  }
}

/**
 * `microbatch serve --watch`: reloads the model when its file changes. The directory is watched,
 * not the file, because deploy tools replace files by rename (and Kubernetes swaps a symlinked
 * directory), which a watch on the old file would never report. Events are settled for
 * `settleMs` before the file is compared by inode, size and mtime, so one copy that writes in many
 * chunks is one reload; a file that is still incomplete fails to load, is logged, and the next
 * change tries again while the current version keeps serving. Reloads never overlap: a change
 * seen during one is handled after it.
 * @internal
 */
export async function watchModelFile(path: string, model: ReloadableModel, log: (line: string) => void, settleMs = 500): Promise<ModelWatch> {
  let loaded = await signature(path);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let closed = false;

  const check = async (): Promise<void> => {
    const now = await signature(path);
    if (closed || now === undefined || now === loaded) return;
    log(`microbatch: ${path} changed; loading it beside version ${model.version} of "${model.name}"`);
    try {
      await model.reload(path);
      loaded = now;
      log(`microbatch: "${model.name}" now serves version ${model.version} from ${path}`);
    } catch (e) {
      // Remembered as seen, so an unloadable file is not retried until it changes again.
      loaded = now;
      log(`microbatch: reload of "${model.name}" failed, version ${model.version} keeps serving: ${(e as Error).message}`);
    }
  };
  const run = (): void => {
    timer = undefined;
    if (running !== undefined) {
      again = true;
      return;
    }
    running = check().finally(() => {
      running = undefined;
      if (again && !closed) {
        again = false;
        run();
      }
    });
  };
  const name = basename(path);
  const watcher: FSWatcher = watch(dirname(path), (_event, file) => {
    // Other files in the directory are ignored, except the dot-entries of a Kubernetes volume swap.
    if (closed || (file !== null && file !== name && !file.startsWith('..'))) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(run, settleMs);
  });
  watcher.on('error', (e) => log(`microbatch: watching ${path} failed, --watch is off: ${e.message}`));
  return {
    async close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      watcher.close();
      await running;
    },
  };
}
