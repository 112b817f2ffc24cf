import { join } from "node:path";
import { packageRoot } from "../../contract/package-root.js";

/** The runner's own helper command (runtime.md §13.2), host-owned. */
export const HELPER_ENV = "PAPERCLIP_RUNTIME_NOTIFICATION_HELPER";
/** The endpoint descriptor's path (runtime.md §13.2), host-owned. */
export const CONTEXT_ENV = "PAPERCLIP_RUNTIME_NOTIFICATION_CONTEXT";

/**
 * Environment keys only the runner sets for a harness: a configured value (`--agent-env`) for
 * one of them is ignored, so a task cannot point its activity at another runner or helper.
 */
export const RESERVED_HARNESS_ENV_KEYS: readonly string[] = [HELPER_ENV, CONTEXT_ENV];

/** The endpoint descriptor's file name, in the runner's state directory. */
export const DESCRIPTOR_FILE = "runtime-notification.json";

/** The absolute path of this build's prp-runnerd: the helper matches the runner that serves it. */
export const helperPath = (): string => join(packageRoot(), "bin/prp-runnerd.js");

/** What the runner publishes to its harness for an endpoint whose descriptor is in `dir`. */
export function publishedEnv(dir: string): Record<string, string> {
  return { [HELPER_ENV]: helperPath(), [CONTEXT_ENV]: join(dir, DESCRIPTOR_FILE) };
}

/** The configured environment without the reserved keys, then the runner's own values on top. */
export function harnessEnv(configured: Record<string, string>, published: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(configured)) if (!RESERVED_HARNESS_ENV_KEYS.includes(key)) env[key] = value;
  return { ...env, ...published };
}
