import { isAbsolute, relative } from "node:path";
import { probeSandbox } from "./sandbox-probe.js";

/**
 * What a harness may see and outlive (docs/threat-model.md). `isolated` runs every harness in
 * namespaces of its own: a PID namespace (no descendant outlives it, whatever it does with
 * sessions and groups), a user namespace (no ptrace, no /proc/PID/mem or environ, no descriptor
 * theft of anything outside), and a filesystem view built from nothing: the system read-only,
 * the workspace and the agent's home writable, the runner's state and every key absent.
 * `none` is the old behaviour, run only when asked for by name.
 */
export const SANDBOX_MODES = ["isolated", "none"] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** Namespaces are a Linux facility: elsewhere the default is `none`, said so on stderr. */
export const defaultSandboxMode = (): SandboxMode => (process.platform === "linux" ? "isolated" : "none");

/** What a user adds to, or takes from, the harness's view. Paths are absolute. */
export interface SandboxPaths {
  /** Visible read-only (besides the system folders). */
  readable: string[];
  /** Visible and writable (besides the workspace and the agent's home). */
  writable: string[];
  /** Never visible, even inside a visible folder: the run's folder, a store, a key. */
  hidden: string[];
}

export interface SandboxPolicy extends SandboxPaths {
  mode: SandboxMode;
}

/** What `--sandbox none` gives up, printed whenever it is chosen. */
export const NO_SANDBOX_WARNING =
  "--sandbox none: the harness runs as this user with nothing between it and the runner. It can leave processes " +
  "running after the run (setsid), read and write every file this user can (the runner's state, the authority's " +
  "store and keys), read the memory and environment of this user's processes, and take the runner's descriptors " +
  "to write a forged record. Use it only for a harness you trust.";

/**
 * A harness's view under a policy: what its driver knows it needs (its workspace, its home, its
 * script, the runtime-activity folder) and what the user added; undefined under `none`.
 */
export function harnessView(policy: SandboxPolicy | undefined, own: Partial<SandboxPaths>): SandboxPaths | undefined {
  if (!policy || policy.mode === "none") return undefined;
  return {
    readable: [...(own.readable ?? []), ...policy.readable],
    writable: [...(own.writable ?? []), ...policy.writable],
    hidden: [...(own.hidden ?? []), ...policy.hidden],
  };
}

/** The exit status of a runner or controller refused the sandbox it was asked for. */
export const SANDBOX_UNAVAILABLE_EXIT = 8;

/** The sandbox a user asked for: `--sandbox` and the paths added to or taken from the harness's view. */
export interface SandboxFlags {
  sandbox: SandboxMode;
  sandboxRead: string[];
  sandboxWrite: string[];
  sandboxHide: string[];
}

/**
 * The policy the flags ask for, with `hidden` (the runner's state, a run's folder) always hidden.
 * Refuses, rather than falls back, when the kernel will not make the namespaces: the caller
 * prints the reason and exits SANDBOX_UNAVAILABLE_EXIT. `none` is said on stderr every time.
 */
export function sandboxPolicy(
  flags: SandboxFlags,
  hidden: string[],
  say: (line: string) => void,
): { ok: true; policy: SandboxPolicy } | { ok: false; message: string } {
  if (flags.sandbox === "none") say(NO_SANDBOX_WARNING);
  else {
    const probe = probeSandbox();
    if (!probe.ok)
      return {
        ok: false,
        message: `--sandbox ${flags.sandbox}: the harness sandbox cannot be set up here: ${probe.reason}. --sandbox none runs the harness without it (read what that gives up in docs/threat-model.md)`,
      };
  }
  return {
    ok: true,
    policy: {
      mode: flags.sandbox,
      readable: flags.sandboxRead,
      writable: flags.sandboxWrite,
      hidden: [...flags.sandboxHide, ...hidden],
    },
  };
}

/**
 * Why an agent may not work in `agentCwd`, or null: its workspace is shown writable, so inside
 * (or at) a hidden path — the runner's state, a run's folder, a --sandbox-hide path — it would
 * show what must stay hidden. Every command that starts an agent asks this before it starts anything.
 */
export function agentCwdRefusal(agentCwd: string, hidden: readonly string[]): string | null {
  const shadowed = hidden.find((h) => {
    const rel = relative(h, agentCwd);
    return rel === "" || !(rel === ".." || rel.startsWith("../") || isAbsolute(rel));
  });
  return shadowed === undefined
    ? null
    : `--agent-cwd ${agentCwd} lies inside ${shadowed}, which the agent must never see (the runner's state or a --sandbox-hide path): give the agent a workspace of its own`;
}
