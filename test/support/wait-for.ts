/**
 * Polls `check` every 5 ms until it holds, for up to `timeoutMs` (5 s): for real-timer tests that
 * wait on something another process or the event loop does, without a fixed sleep. `what` names
 * the condition in the error.
 */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waitFor: ${what} not met in ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
