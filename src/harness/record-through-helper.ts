import { execFile } from "node:child_process";
import { HELPER_ENV } from "./notification-env.js";

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the helper with the harness's own environment (what the runner published), never a shell. */
function run(helper: string, args: string[]): Promise<Ran> {
  return new Promise((done) => {
    execFile(helper, args, { env: process.env, timeout: 120_000 }, (error, stdout, stderr) => {
      const status = error ? (typeof error.code === "number" ? error.code : null) : 0;
      done({ status, stdout, stderr: stderr || (error && typeof error.code !== "number" ? error.message : "") });
    });
  });
}

/**
 * What a tool in the harness does after a successful operation (runtime.md §13.2): capture the
 * context, then record the activity with the runner's published helper. Returns one log line
 * with the helper's exit status, the record a test or a person reads.
 */
export async function recordThroughHelper(namespace: string, activityKey: string): Promise<string> {
  const helper = process.env[HELPER_ENV];
  if (!helper) return `record_activity: ${HELPER_ENV} is not set: no runner published its helper`;
  const context = await run(helper, ["notification-context"]);
  if (context.status !== 0)
    return `record_activity: notification-context exited ${context.status}: ${context.stderr.trim()}`;
  const recorded = await run(helper, ["record-activity", "--", context.stdout.trim(), namespace, activityKey]);
  return `record_activity ${JSON.stringify(namespace)} ${JSON.stringify(activityKey)}: record-activity exited ${recorded.status}${recorded.status === 0 ? "" : `: ${recorded.stderr.trim()}`}`;
}
