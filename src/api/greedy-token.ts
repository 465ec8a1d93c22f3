import { greedy as argmax } from '../generate/generation-host';

/**
 * The default token chooser of generation (`choose`): the index of the largest logit. Named for
 * what it chooses, apart from `greedyPolicy` (a batch release policy).
 *
 * @example
 * ```ts
 * const host = new GenerationHost(step, { maxBatchSize: 8, initialState, choose: greedyToken });
 * greedyToken([0.1, 2.5, 0.3]); // 1
 * ```
 */
export const greedyToken: (logits: ArrayLike<number>) => number = argmax;

/**
 * The older name of {@link greedyToken}.
 * @deprecated Use `greedyToken` from `microbatch/generate` (`greedy` beside `greedyPolicy` read as a release policy).
 *
 * @example
 * ```ts
 * const token = greedy(logits); // now: greedyToken(logits)
 * ```
 */
export const greedy: typeof greedyToken = greedyToken;
