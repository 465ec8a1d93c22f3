// The simulation lives in src/engine/simulate.ts (microbatch bench predicts with it); the tests,
// the plot script and the benchmarks import it from here as before.
export * from '../../src/engine/simulate';
