import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { InvalidArgumentError, Option, type Command } from "commander";
import { probeSandbox } from "../harness/sandbox/sandbox-probe.js";
import { defaultSandboxMode, NO_SANDBOX_WARNING, SANDBOX_MODES, type SandboxMode, type SandboxPolicy } from "../harness/sandbox/sandbox-policy.js";

/** The exit status of a runner or controller refused the sandbox it was asked for. */
export const SANDBOX_UNAVAILABLE_EXIT = 8;

export interface SandboxFlags {
  sandbox: SandboxMode;
  sandboxRead: string[];
  sandboxWrite: string[];
  sandboxHide: string[];
}

const existing = (value: string, previous: string[] = []): string[] => {
  const path = resolve(value);
  if (!existsSync(path)) throw new InvalidArgumentError(`"${value}" does not exist`);
  return [...previous, path];
};
const anyPath = (value: string, previous: string[] = []): string[] => [...previous, resolve(value)];

/** `--sandbox` and the paths a user adds to or takes from the harness's view. */
export function withSandboxOptions(command: Command): Command {
  return command
    .addOption(new Option("--sandbox <mode>", "isolated: the harness runs in its own PID, user and mount namespaces, sees the system read-only, its workspace and HOME writable, and nothing of the runner (the default on Linux); none: no isolation (said on stderr with what it gives up)").choices([...SANDBOX_MODES]).default(defaultSandboxMode()))
    .option("--sandbox-read <path>", "isolated: also show this path to the harness, read-only (repeatable)", existing, [])
    .option("--sandbox-write <path>", "isolated: also show this path to the harness, writable (repeatable)", existing, [])
    .option("--sandbox-hide <path>", "isolated: never show this path to the harness, even inside a visible folder (repeatable)", anyPath, []);
}

/** The prp-runnerd flags that carry a controller's sandbox flags, plus paths it hides itself. */
export function sandboxRunnerdArgs(flags: SandboxFlags, hidden: string[] = []): string[] {
  return [
    "--sandbox", flags.sandbox,
    ...flags.sandboxRead.flatMap((p) => ["--sandbox-read", p]),
    ...flags.sandboxWrite.flatMap((p) => ["--sandbox-write", p]),
    ...[...flags.sandboxHide, ...hidden].flatMap((p) => ["--sandbox-hide", p]),
  ];
}

/**
 * The policy the flags ask for, with `hidden` (the runner's state, a run's folder) always hidden.
 * Refuses, rather than falls back, when the kernel will not make the namespaces: the caller
 * prints the reason and exits SANDBOX_UNAVAILABLE_EXIT. `none` is said on stderr every time.
 */
export function sandboxPolicy(flags: SandboxFlags, hidden: string[], say: (line: string) => void): { ok: true; policy: SandboxPolicy } | { ok: false; message: string } {
  if (flags.sandbox === "none") say(NO_SANDBOX_WARNING);
  else {
    const probe = probeSandbox();
    if (!probe.ok) return { ok: false, message: `--sandbox ${flags.sandbox}: the harness sandbox cannot be set up here: ${probe.reason}. --sandbox none runs the harness without it (read what that gives up in docs/threat-model.md)` };
  }
  return { ok: true, policy: { mode: flags.sandbox, readable: flags.sandboxRead, writable: flags.sandboxWrite, hidden: [...flags.sandboxHide, ...hidden] } };
}
