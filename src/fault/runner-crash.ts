import { join } from "node:path";
import { packageRoot } from "../contract/package-root.js";
import type { ActivityRecorder } from "../runner/activity/activity-endpoint.js";
import type { RunnerHooks } from "../runner/runner-hooks.js";

/** Where a runner process kills itself with SIGKILL (the `crash-*` faults, `PRP_RUNNER_CRASH_AT`). */
export interface CrashPoint {
  /**
   * `after-commit` / `after-journal`: right after committing event `at` (before sending it), or
   * right after journaling command `at` (before its effect) — the two points where a crash must
   * lose and repeat nothing.
   * `after-credential`: right after credential revision `at` is committed with its baseline, before its event reaches the outbox.
   * `before-activity-commit` / `after-activity-commit`: around the commit of the `at`-th runtime activity.
   */
  point: "after-commit" | "after-journal" | "after-credential" | "before-activity-commit" | "after-activity-commit";
  at: number;
}

/** Parses `POINT:N` for each point above; null for anything else. */
export function parseCrashPoint(text: string | undefined): CrashPoint | null {
  const m =
    /^(after-commit|after-journal|after-credential|before-activity-commit|after-activity-commit):([1-9][0-9]*)$/.exec(
      text ?? "",
    );
  return m ? { point: m[1] as CrashPoint["point"], at: Number(m[2]) } : null;
}

const crash = (): never => {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable: SIGKILL");
};

/** The runner hooks that kill the process at `crashAt`; `log` says so at an activity point. */
export function crashHooks(crashAt: CrashPoint, log: (text: string) => void): RunnerHooks {
  const at = (point: CrashPoint["point"]) => (n: number) => {
    if (crashAt.point === point && crashAt.at === n) crash();
  };
  return {
    afterCommit: at("after-commit"),
    afterJournal: at("after-journal"),
    afterCredential: at("after-credential"),
    activity: (record) => withActivityCrashPoint(record, crashAt, log),
  };
}

/**
 * The activity points (local and durable mode): the runner says it reached the point, then
 * kills itself when runtime activity record `at` has arrived, before it is committed
 * (`before-activity-commit:N`), or right after the commit, before the helper hears so
 * (`after-activity-commit:N`). Other crash points leave the recorder as it is.
 */
function withActivityCrashPoint(
  record: ActivityRecorder,
  crashAt: CrashPoint,
  log: (text: string) => void,
): ActivityRecorder {
  if (crashAt.point !== "before-activity-commit" && crashAt.point !== "after-activity-commit") return record;
  let records = 0;
  const crashHere = () => {
    log(`crash point ${crashAt.point}:${crashAt.at} reached`);
    process.kill(process.pid, "SIGKILL");
  };
  return async (payload) => {
    const n = ++records;
    if (n === crashAt.at && crashAt.point === "before-activity-commit") crashHere();
    const outcome = await record(payload);
    if (n === crashAt.at && crashAt.point === "after-activity-commit" && outcome === "recorded") crashHere();
    return outcome;
  };
}

/** The prp-runnerd entry that honours `PRP_RUNNER_CRASH_AT` (faulty-runnerd.ts), for spawnRunner's `runnerd`. */
export const faultyRunnerd = (): string => join(packageRoot(), "dist/src/fault/faulty-runnerd.js");
