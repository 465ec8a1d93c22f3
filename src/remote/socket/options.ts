import { fail } from '../../core/options';

/** Frames larger than this are refused unless configured: 256 MiB. @internal */
const DEFAULT_MAX_FRAME_BYTES = 256 * 1024 * 1024;

/** The version both ends announce; a mismatch is refused at connection time. @internal */
export const PROTOCOL_VERSION = 1;

/** @internal */
export function checkPath(where: string, path: unknown): string {
  if (typeof path !== 'string' || path === '') fail(where, 'path', 'a Unix socket path or a Windows named pipe (\\\\.\\pipe\\name)', path);
  return path;
}

/** @internal */
export function checkMaxFrameBytes(where: string, value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_FRAME_BYTES;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1024 || value > 0xffffffff) {
    fail(where, 'maxFrameBytes', 'an integer from 1024 to 4294967295', value, typeof value === 'number' ? RangeError : TypeError);
  }
  return value;
}
