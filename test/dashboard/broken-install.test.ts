import fs from 'node:fs';
import { createInferenceServer } from '../../src/http';
import { createServingHost } from '../../src/onnx/serving-host';
import { call } from '../http/helpers';
import { useLinearModel } from './served';

// A page file that cannot be read (a broken install) is a 500 naming it, never a crashed server.
// Its own file: the dashboard keeps files it read, so this must be the first read in the process.

const linear = useLinearModel();

test('an unreadable dashboard file answers 500 dashboard_file_missing, and the server keeps serving', async () => {
  const host = await createServingHost(linear(), { name: 'linear', maxBatchSize: 8, workers: 0 });
  const server = createInferenceServer({ models: { linear: host }, dashboard: true });
  const { port } = await server.listen(0);
  const real = fs.readFileSync;
  const read = jest.spyOn(fs, 'readFileSync').mockImplementation(((path: fs.PathOrFileDescriptor, ...rest: never[]) => {
    if (String(path).endsWith('dashboard.css')) throw new Error(`ENOENT: no such file or directory, open '${String(path)}'`);
    return (real as (...a: unknown[]) => unknown)(path, ...rest);
  }) as typeof fs.readFileSync);
  try {
    const r = await call(port, 'GET', '/dashboard/dashboard.css');
    expect(r.status).toBe(500);
    expect(r.json()).toEqual({ error: expect.stringMatching(/^the dashboard's file dashboard\.css cannot be read \(ENOENT: no such file or directory, open '.*dashboard\.css'\); reinstall microbatch$/), code: 'dashboard_file_missing' });
    expect((await call(port, 'GET', '/dashboard/')).status).toBe(200);
    expect((await call(port, 'GET', '/v2/health/live')).status).toBe(200);
  } finally {
    read.mockRestore();
    await server.close();
  }
});
