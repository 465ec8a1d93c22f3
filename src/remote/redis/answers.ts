import type { RedisConnection } from './connection';
import { encodeReply } from './entry';
import type { RedisKeys } from './keys';
import { REPLY } from './scripts';

/** Where a replica's answers go, and the counters they move. @internal */
export interface AnswerTarget {
  readonly commands: RedisConnection;
  readonly keys: RedisKeys;
  readonly group: string;
  readonly consumer: string;
  readonly replyTtlMs: number;
  /** The replica's counters: `answered` (a reply delivered) and `refused` (the entry was no longer ours). */
  readonly stats: { answered: number; refused: number };
}

/**
 * A replica's answers on their way to Redis: those settled in the same turn of the event loop (a
 * batch's) go in one script call, so a batch costs one round trip and one script run, not one per
 * request. An answer is written, and its entry retired, only if the entry is still this replica's.
 * @internal
 */
export class Answers {
  /** Answers waiting for the next flush. */
  readonly #outbox: Array<{ id: string; replyKey: string | undefined; requestId: string; payload: Buffer | undefined; done: () => void }> = [];

  constructor(private readonly to: AnswerTarget) {}

  /**
   * Answers (or, without a reply address, just retires) entry `id`; resolves once Redis has it or
   * is found unreachable (the entry then stays pending and is taken over once Redis is back).
   */
  send(id: string, frontEnd: string | undefined, requestId: string | undefined, result: { value: unknown } | { error: Error } | undefined): Promise<void> {
    let payload: Buffer | undefined;
    if (result !== undefined && frontEnd !== undefined && requestId !== undefined) {
      try {
        payload = encodeReply(result);
      } catch (e) {
        payload = encodeReply({ error: new TypeError(`microbatch/redis: the result of request ${id} cannot be sent back: ${(e as Error).message}`) });
      }
    }
    return new Promise<void>((resolve) => {
      this.#outbox.push({ id, replyKey: payload === undefined ? undefined : this.to.keys.reply(frontEnd!), requestId: payload === undefined ? '' : requestId!, payload, done: resolve });
      if (this.#outbox.length === 1) setImmediate(() => void this.#flush());
    });
  }

  async #flush(): Promise<void> {
    const to = this.to;
    const answers = this.#outbox.splice(0);
    const keys = [to.keys.requests];
    const args: Array<string | Buffer> = [to.group, to.consumer, String(to.replyTtlMs), String(answers.length)];
    for (const a of answers) {
      let at = a.replyKey === undefined ? 0 : keys.indexOf(a.replyKey);
      if (at < 0) at = keys.push(a.replyKey!) - 1;
      args.push(a.id, String(at + 1), a.requestId, a.payload ?? '');
    }
    try {
      const done = await to.commands.script<number[]>(REPLY, keys, args);
      answers.forEach((a, i) => {
        if (done[i] !== 1) to.stats.refused++;
        else if (a.payload !== undefined) to.stats.answered++;
      });
    } catch {
      // Redis is unreachable: the entries stay pending, and are taken over and answered once it is back.
    }
    for (const a of answers) a.done();
  }
}
