import type { CrashPoint } from "../durable/durable-runner.js";
import type { ActivityRecorder } from "./activity-endpoint.js";

/**
 * Fault injection (`PRP_RUNNER_CRASH_AT`, local and durable mode): the runner says it reached the
 * point, then kills itself with SIGKILL when runtime activity record `at` has arrived, before it
 * is committed (`before-activity-commit:N`), or right after the commit, before the helper hears
 * so (`after-activity-commit:N`). Other crash points leave the recorder as it is.
 */
export function withActivityCrashPoint(
  record: ActivityRecorder,
  crashAt: CrashPoint | null,
  log: (text: string) => void,
): ActivityRecorder {
  if (crashAt?.point !== "before-activity-commit" && crashAt?.point !== "after-activity-commit") return record;
  let records = 0;
  const crash = () => {
    log(`crash point ${crashAt.point}:${crashAt.at} reached`);
    process.kill(process.pid, "SIGKILL");
  };
  return async (payload) => {
    const n = ++records;
    if (n === crashAt.at && crashAt.point === "before-activity-commit") crash();
    const outcome = await record(payload);
    if (n === crashAt.at && crashAt.point === "after-activity-commit" && outcome === "recorded") crash();
    return outcome;
  };
}
