import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../../src/cli/args';
import { serve } from '../../src/cli/serve';
import { linearModel } from '../support/onnx-models';

// serve's flags that are refused before a model loads, run in-process (the spawned CLI is tested in cli.test.ts).

let dir: string;
let modelPath: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-serve-flags-'));
  modelPath = join(dir, 'linear.onnx');
  writeFileSync(modelPath, linearModel(4, 3));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const io = { out: () => undefined, err: () => undefined, status: () => undefined, tty: false };

test('--cors-origin: an origin that is not scheme://host[:port] (or *) is a usage error naming it', async () => {
  const run = serve([modelPath, '--cors-origin', 'https://a.example,app.example.com'], io);
  await expect(run).rejects.toThrow(UsageError);
  await expect(serve([modelPath, '--cors-origin', 'https://a.example/'], io)).rejects.toThrow(
    `microbatch serve: --cors-origin: a CORS origin is '*' or a scheme, host and optional port such as 'https://app.example.com' (no path, no trailing slash), got "https://a.example/"`,
  );
});

test.each(['-1', '1.5', 'lots', ''])('--heap-ballast-mb %j is a usage error naming the flag and the value', async (value) => {
  await expect(serve([modelPath, `--heap-ballast-mb=${value}`], io)).rejects.toThrow(
    new UsageError(`microbatch serve: --heap-ballast-mb must be an integer from 0 to 65536, got ${JSON.stringify(value)}`),
  );
});
