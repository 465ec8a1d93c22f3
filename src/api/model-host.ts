// The engine moved to src/engine/. This re-export stays only until test/executors/event-loop.test.ts
// (owned by another change) imports from 'microbatch' or src/engine; delete it then.
export { ModelHost, type HostStats, type StopOptions } from '../engine/model-host';
