import { setTimeout as sleep } from "node:timers/promises";
import type { HarnessGone } from "./harness-driver.js";
import { DEFAULT_SHUTDOWN_GRACE_MS, type SupervisedProcess } from "./supervisor.js";

/**
 * Resolves once a supervised harness is gone for good: its leader exited, its stdout was read
 * to the end (a worker that still holds the pipe gets the grace time, then the group is ended
 * so the pipe closes), and its whole group was ended — SIGKILL even after a clean exit, so no
 * worker survives (runtime.md §4.7).
 */
export async function whenGone(h: SupervisedProcess, graceMs = DEFAULT_SHUTDOWN_GRACE_MS): Promise<HarnessGone> {
  const exit = await h.exited;
  const drained = await Promise.race([h.stdoutEnded.then(() => true), sleep(graceMs).then(() => false)]);
  await h.terminate();
  if (!drained) await h.stdoutEnded;
  return { exit, log: h.log.snapshot() };
}
