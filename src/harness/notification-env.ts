import { dirname, join } from "node:path";
import { packageRoot } from "../contract/package-root.js";
import { isReservedEnvironmentKey } from "../contract/reserved-environment.js";

/** The runner's own helper command (runtime.md §13.2), host-owned. */
export const HELPER_ENV = "PAPERCLIP_RUNTIME_NOTIFICATION_HELPER";
/** The endpoint descriptor's path (runtime.md §13.2), host-owned. */
export const CONTEXT_ENV = "PAPERCLIP_RUNTIME_NOTIFICATION_CONTEXT";

/**
 * The current harness generation's secret (see HarnessActivity): the helper sends it with every
 * request. Runner-owned like the two above; it is not in the contract's reserved list, but the
 * runner's value always replaces a configured one (harnessEnv).
 */
export const SECRET_ENV = "PAPERCLIP_RUNTIME_NOTIFICATION_SECRET";

/** The endpoint descriptor's file name, in the runner's private activity folder (HarnessActivity.dir). */
export const DESCRIPTOR_FILE = "runtime-notification.json";

/** The absolute path of this build's prp-runnerd: the helper matches the runner that serves it. */
export const helperPath = (): string => join(packageRoot(), "bin/prp-runnerd.js");

/** The folder of the activity endpoint an environment names: what a sandboxed harness must see of the runner. */
export const activityDirOf = (env: Record<string, string | undefined>): string[] =>
  env[CONTEXT_ENV] ? [dirname(env[CONTEXT_ENV])] : [];

/**
 * The configured environment without the host-owned keys (the contract's list and the generation
 * secret: a task cannot point its activity at another runner or helper, borrow another
 * harness's secret, nor set the bootstrap ticket), then the runner's own values on top.
 */
export function harnessEnv(
  configured: Record<string, string>,
  published: Record<string, string>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(configured))
    if (!isReservedEnvironmentKey(key) && key !== SECRET_ENV) env[key] = value;
  return { ...env, ...published };
}
