import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../../src/cli/args';
import { serve, SERVE_HELP } from '../../src/cli/serve';
import { recurrentDecoderModel } from '../../examples/support/decoder-models';
import { recurrentAlone } from '../support/greedy-alone';
import { call } from '../http/helpers';
import { spawnServe } from '../support/spawn-serve';

// `microbatch serve decoder.onnx --decoder-token ... --decoder-logits ...`: a decoder from its file,
// configured by the flags that stand for a repository config's decoder parameters.

const io = { out: () => undefined, err: () => undefined, status: () => undefined, tty: false };
const DECODER = ['--decoder-token', 'token', '--decoder-logits', 'logits', '--decoder-state', 'state:next_state'];
let dir: string;
let file: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-serve-decoder-'));
  file = join(dir, 'writer.onnx');
  writeFileSync(file, recurrentDecoderModel());
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test.each([
  [['--decoder-token', 'token'], 'microbatch serve: a decoder needs --decoder-token NAME and --decoder-logits NAME (its token input and scores output); --decoder-logits is missing'],
  [[...DECODER, '--watch', '--workers', '2'], 'microbatch serve: --watch, --workers do not apply to a decoder (the --decoder-* flags serve one, on the main thread, step by step)'],
  [[...DECODER, '--decoder-cache', 'k'], 'microbatch serve: --decoder-cache expected "input:output" pairs separated by commas, got "k"'],
  [[...DECODER, '--stop-tokens', '1,x'], 'microbatch serve: --stop-tokens expected integers >= 0 separated by commas, got "1,x"'],
  [[...DECODER, '--max-tokens', '0'], 'microbatch serve: --max-tokens must be an integer from 1 up, got "0"'],
])('serve decoder.onnx %j is a usage error', async (flags, message) => {
  await expect(serve([file, '--port', '0', ...flags], io)).rejects.toThrow(UsageError);
  await expect(serve([file, '--port', '0', ...flags], io)).rejects.toThrow(message);
});

test('the decoder flags with a repository folder are a usage error, and the help lists them', async () => {
  await expect(serve([dir, '--decoder-token', 't'], io)).rejects.toThrow('microbatch serve: --decoder-token applies to one model file, not to a model repository folder');
  for (const flag of ['--decoder-token NAME', '--decoder-logits NAME', '--decoder-state IN:OUT', '--decoder-cache IN:OUT', '--decoder-mask-key NAME', '--stop-tokens ID', '--max-tokens N']) expect(SERVE_HELP).toContain(flag);
});

test('serve decoder.onnx --decoder-*: tokens stream over /generate_stream as the model computes them; SIGTERM exits 0', async () => {
  const s = await spawnServe([file, '--threads', '1', '--max-tokens', '4', ...DECODER]);
  try {
    expect(s.stdout()).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ \(POST \/v2\/models\/writer\/generate_stream\)/);
    expect(s.stderr()).toContain('microbatch: decoder "writer" (token token, logits logits)');
    const port = s.port;
    const expected = recurrentAlone([5], 4); // greedy decoding of the prompt alone, on the model's JS reference
    const r = await call(port, 'POST', '/v2/models/writer/generate', { body: { input_ids: [5] } });
    expect(r.json()).toMatchObject({ model_name: 'writer', output_ids: expected });
    expect((await call(port, 'GET', '/v2/models/writer')).status).toBe(200);
  } finally {
    expect(await s.stop()).toBe(0);
  }
}, 120_000);
