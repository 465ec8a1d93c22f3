import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { UsageError } from '../../src/cli/args';
import { serve, SERVE_HELP } from '../../src/cli/serve';
import { linearModel } from '../support/onnx-models';
import { tempRepository } from './helpers';

// serve <dir>'s flags, refused before anything loads.

const io = { out: () => undefined, err: () => undefined, status: () => undefined, tty: false };
let repo: ReturnType<typeof tempRepository>;
let file: string;
beforeAll(() => {
  repo = tempRepository();
  repo.model('a', [1]);
  file = join(repo.dir, 'single.onnx');
  writeFileSync(file, linearModel());
});
afterAll(() => repo.cleanup());

test.each([
  [['--model-control-mode', 'sometimes'], 'microbatch serve: --model-control-mode must be none, poll or explicit, got "sometimes"'],
  [['--load-model', 'a'], 'microbatch serve: --load-model needs --model-control-mode explicit (in none mode every model loads at start)'],
  [['--model-control-mode', 'explicit', '--load-model', '*', '--load-model', 'a'], 'microbatch serve: --load-model * loads every model and must be the only --load-model'],
  [['--repository-poll-secs', '5'], 'microbatch serve: --repository-poll-secs needs --model-control-mode poll'],
  [['--model-control-mode', 'poll', '--repository-poll-secs=-1'], 'microbatch serve: --repository-poll-secs must be a number from 0 up, got "-1"'],
  [['--name', 'x', '--watch'], 'microbatch serve: --name, --watch apply to one model file, not to a model repository folder'],
])('serve <dir> %j is a usage error', async (flags, message) => {
  const run = serve([repo.dir, '--port', '0', ...flags], io);
  await expect(run).rejects.toThrow(UsageError);
  await expect(serve([repo.dir, '--port', '0', ...flags], io)).rejects.toThrow(message);
});

test('the repository flags with a model file are a usage error', async () => {
  await expect(serve([file, '--model-control-mode', 'poll'], io)).rejects.toThrow('microbatch serve: --model-control-mode needs a model repository folder, not a model file');
});

test('the help lists the repository flags', () => {
  for (const flag of ['--model-control-mode MODE', '--load-model NAME', '--repository-poll-secs N']) expect(SERVE_HELP).toContain(flag);
  expect(SERVE_HELP.split('\n').slice(0, 2)).toEqual(['Usage: microbatch serve <model.onnx> [options]', '       microbatch serve <model-repository-dir> [options]']);
});
