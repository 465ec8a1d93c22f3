import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInferenceServer, type InferenceServer } from '../../src/http';
import { ConfigValueError, ModelRepository, modelSettings, readTextConfig } from '../../src/repository';
import { createServingCore, type ServingCore } from '../../src/serving';
import { recurrentDecoderModel } from '../../examples/support/decoder-models';
import { recurrentAlone } from '../support/greedy-alone';
import { call } from '../http/helpers';
import { tempRepository, TEST_DEFAULTS } from './helpers';

// A decoder in the repository: its config's parameters name the tensors DecoderBatcher needs, and it
// is served as a generator on /generate and /generate_stream.

const DECODER = `
max_batch_size: 4
parameters { key: "decoder.token" value { string_value: "token" } }
parameters { key: "decoder.logits" value { string_value: "logits" } }
parameters { key: "decoder.state" value { string_value: "state:next_state" } }
parameters { key: "maxTokens" value { string_value: "5" } }
`;

let repo: ReturnType<typeof tempRepository>;
let core: ServingCore;
let server: InferenceServer;
let repository: ModelRepository;
afterEach(async () => {
  await repository?.close();
  await server?.close();
  await core?.close();
  repo.cleanup();
});

function events(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => JSON.parse(e.slice('data: '.length)) as Record<string, unknown>);
}

test('a decoder in the repository streams its tokens over /generate_stream, as the model computes them', async () => {
  repo = tempRepository();
  mkdirSync(join(repo.dir, 'writer', '1'), { recursive: true });
  writeFileSync(join(repo.dir, 'writer', 'config.pbtxt'), DECODER);
  writeFileSync(join(repo.dir, 'writer', '1', 'model.onnx'), recurrentDecoderModel());
  repo.model('lin', [1]);
  core = createServingCore({ filledLater: true });
  repository = new ModelRepository(repo.dir, core, { defaults: TEST_DEFAULTS });
  await repository.start();
  server = createInferenceServer({ core });
  const { port } = await server.listen(0);

  const expected = recurrentAlone([5], 5); // greedy decoding of the prompt alone, on the model's JS reference
  const r = await call(port, 'POST', '/v2/models/writer/generate_stream', { body: { input_ids: [5] } });
  expect(r.status).toBe(200);
  const got = events(r.text);
  expect(got.slice(0, -1).map((e) => (e.output_ids as number[])[0])).toEqual(expected);
  expect(got.at(-1)).toMatchObject({ model_name: 'writer', model_version: '1', finish_reason: 'length' });
  const whole = await call(port, 'POST', '/v2/models/writer/versions/1/generate', { body: { input_ids: [5], parameters: { max_tokens: 2 } } });
  expect(whole.json()).toMatchObject({ model_version: '1', output_ids: expected.slice(0, 2) });
  expect((await call(port, 'POST', '/v2/models/writer/infer', { body: {} })).json().code).toBe('not_a_batching_model');
  expect((await call(port, 'POST', '/v2/repository/index')).json()).toEqual([
    { name: 'lin', version: '1', state: 'READY', reason: '' },
    { name: 'writer', version: '1', state: 'READY', reason: '' },
  ]);
});

test('a decoder naming a tensor the model lacks is refused alone, naming its tensors; malformed decoder parameters name the file', async () => {
  repo = tempRepository();
  mkdirSync(join(repo.dir, 'writer', '1'), { recursive: true });
  writeFileSync(join(repo.dir, 'writer', 'config.pbtxt'), DECODER.replace('state:next_state', 'state:hidden'));
  writeFileSync(join(repo.dir, 'writer', '1', 'model.onnx'), recurrentDecoderModel());
  core = createServingCore({ filledLater: true });
  repository = new ModelRepository(repo.dir, core, { defaults: TEST_DEFAULTS });
  await repository.start();
  expect(repository.index()).toEqual([
    { name: 'writer', version: '1', state: 'UNAVAILABLE', reason: 'the decoder parameters name output "hidden", which the model does not have; its inputs are token, state, its outputs logits, next_state' },
  ]);
  const settings = (text: string) => modelSettings(readTextConfig(text, 'c.pbtxt').config, 'c.pbtxt', 'c', TEST_DEFAULTS);
  expect(() => settings('parameters { key: "decoder.token" value { string_value: "t" } }')).toThrow(ConfigValueError);
  expect(() => settings('parameters { key: "decoder.token" value { string_value: "t" } }')).toThrow('c.pbtxt: parameters: a decoder needs both "decoder.token" (its token input) and "decoder.logits" (its scores output), got {"token":"t"}');
  expect(() => settings(`${DECODER}parameters { key: "decoder.cache" value { string_value: "k" } }`)).toThrow('c.pbtxt: parameters["decoder.cache"]: expected "input:output" pairs separated by commas, got "k"');
  expect(() => settings(`${DECODER}parameters { key: "stopTokens" value { string_value: "1,x" } }`)).toThrow('c.pbtxt: parameters["stopTokens"]: expected integers >= 0 separated by commas, got "1,x"');
  expect(settings(`${DECODER}parameters { key: "stopTokens" value { string_value: "0, 3" } }`).decoder).toEqual({ token: 'token', logits: 'logits', state: { state: 'next_state' }, stopTokens: [0, 3], maxTokens: 5 });
});
