import { dirname, join } from "node:path";
import { packageRoot } from "../../contract/package-root.js";
import { isReservedEnvironmentKey } from "../../contract/reserved-environment.js";

/** The runner's own helper command (runtime.md §13.2), host-owned. */
export const HELPER_ENV = "PAPERCLIP_RUNTIME_NOTIFICATION_HELPER";
/** The endpoint descriptor's path (runtime.md §13.2), host-owned. */
export const CONTEXT_ENV = "PAPERCLIP_RUNTIME_NOTIFICATION_CONTEXT";

/** The endpoint descriptor's file name, in the runner's state directory. */
export const DESCRIPTOR_FILE = "runtime-notification.json";

/** The absolute path of this build's prp-runnerd: the helper matches the runner that serves it. */
export const helperPath = (): string => join(packageRoot(), "bin/prp-runnerd.js");

/** What the runner publishes to its harness for an endpoint whose descriptor is in `dir`. */
export function publishedEnv(dir: string): Record<string, string> {
  return { [HELPER_ENV]: helperPath(), [CONTEXT_ENV]: join(dir, DESCRIPTOR_FILE) };
}

/** The folder of the activity endpoint an environment names: what a sandboxed harness must see of the runner. */
export const activityDirOf = (env: Record<string, string | undefined>): string[] => (env[CONTEXT_ENV] ? [dirname(env[CONTEXT_ENV])] : []);

/**
 * The configured environment without the host-owned keys (the contract's list: a task cannot
 * point its activity at another runner or helper, nor set the bootstrap ticket), then the
 * runner's own values on top.
 */
export function harnessEnv(configured: Record<string, string>, published: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(configured)) if (!isReservedEnvironmentKey(key)) env[key] = value;
  return { ...env, ...published };
}
