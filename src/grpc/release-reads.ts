/**
 * Lets go of the received bytes grpc-js keeps after a message is decoded. Its per-call decoder
 * holds the chunks the message arrived in (views into Node's 64 KiB socket read buffers, often
 * two per raw classifier request) until the *next* message begins, which for a unary call is
 * never: every call waiting in the host's queue kept about 128 KiB of read buffers alive beside
 * its own 110 KiB tensor (measured in a heap snapshot with 64 calls in flight: 108 such buffers,
 * 6.9 MB; none after). This drops those references once a message is out. It reaches into
 * grpc-js's private fields (1.10–1.14); where a version keeps them elsewhere, nothing changes but
 * memory, and test/grpc/release-reads.test.ts fails so that it is noticed.
 */

/** What grpc-js keeps privately and this module reaches for. */
interface CallInternals {
  call?: { decoder?: { readState?: unknown; readPartialMessage?: unknown; readCompressFlag?: unknown } };
}

/** grpc-js's `ReadState.NO_DATA`: between messages, nothing of the next one read yet. */
const BETWEEN_MESSAGES = 0;
const NO_FLAG = Buffer.alloc(1);

/**
 * Drops the decoder's hold on the chunks of the message just received, when it is between
 * messages (a stream's next message may already be half read: then it is left alone). Returns
 * whether it did.
 * @internal
 */
export function releaseReadBuffers(call: object): boolean {
  const decoder = (call as CallInternals).call?.decoder;
  if (decoder === undefined || decoder.readState !== BETWEEN_MESSAGES || !Array.isArray(decoder.readPartialMessage)) return false;
  decoder.readPartialMessage = [];
  decoder.readCompressFlag = NO_FLAG;
  return true;
}
