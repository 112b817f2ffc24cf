/**
 * Polls a condition every 5 ms; past the deadline it throws, saying what it waited for (`what`
 * may be a function, to describe the state at that moment). The deadline only turns a hang into
 * a failure with a name: it is generous (60 s) because a loaded CI machine may take many times
 * longer than a quiet one, and no test measures speed with it.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string | (() => string) = "condition",
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === "string" ? what : what()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
