import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { createOnnxHost } from '../../src/onnx';
import { createInferenceServer } from '../../src/http';
import { linearModel, linearReference } from '../support/onnx-models';
import { call, jsonInputs, modelFiles } from './helpers';

// Model versions: a server serves one version per model, the one its host serves now; a reload
// moves every route to the new one.

test('after a reload, metadata, the model list, stats, readiness and answers name the new version, and the old one is 404', async () => {
  const files = modelFiles();
  const v2 = join(files.dir, 'linear-v2.onnx');
  writeFileSync(v2, linearModel(4, 3, 2));
  const host = await createOnnxHost(files.linear, { maxBatchSize: 4, session: { intraOpNumThreads: 1 } });
  const s = createInferenceServer({ models: { lin: host } });
  const { port } = await s.listen(0);
  const row = [1, 2, 3, 4];
  const infer = (path: string) => call(port, 'POST', path, { body: jsonInputs({ X: { shape: [1, 4], data: row } }) });
  try {
    const before = await infer('/v2/models/lin/versions/1/infer');
    expect(before.json()).toMatchObject({ model_name: 'lin', model_version: '1' });
    await host.reload(v2, { version: '2' });

    expect((await call(port, 'GET', '/v2/models/lin')).json()).toMatchObject({ name: 'lin', versions: ['2'] });
    expect((await call(port, 'GET', '/v2/models')).json()).toEqual({ models: [{ name: 'lin', versions: ['2'], state: 'ready' }] });
    const after = await infer('/v2/models/lin/versions/2/infer');
    expect(after.status).toBe(200);
    expect(after.json()).toMatchObject({ model_name: 'lin', model_version: '2' });
    const y = after.json().outputs[0].data as number[];
    linearReference(row, 4, 3, 2).forEach((v, j) => expect(y[j]).toBeCloseTo(v, 4));
    expect((await infer('/v2/models/lin/infer')).json()).toMatchObject({ model_version: '2' });
    expect((await call(port, 'GET', '/v2/models/lin/versions/2/ready')).status).toBe(200);
    expect((await call(port, 'GET', '/v2/models/lin/stats')).json().model_stats[0]).toMatchObject({ name: 'lin', version: '2' });
    for (const path of ['/v2/models/lin/versions/1', '/v2/models/lin/versions/1/ready', '/v2/models/lin/versions/1/config']) {
      const r = await call(port, 'GET', path);
      expect({ path, status: r.status, body: r.json() }).toEqual({
        path,
        status: 404,
        body: { code: 'model_version_not_found', error: 'model "lin" has no version "1"; its version is "2"' },
      });
    }
    expect((await infer('/v2/models/lin/versions/1/infer')).status).toBe(404);
  } finally {
    await s.close();
    files.cleanup();
  }
});
