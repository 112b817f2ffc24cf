import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { InvalidArgumentError, Option, type Command } from "commander";
import { defaultSandboxMode, SANDBOX_MODES, type SandboxFlags } from "../harness/sandbox/sandbox-policy.js";

const existing = (value: string, previous: string[] = []): string[] => {
  const path = resolve(value);
  if (!existsSync(path)) throw new InvalidArgumentError(`"${value}" does not exist`);
  return [...previous, path];
};
const anyPath = (value: string, previous: string[] = []): string[] => [...previous, resolve(value)];

/** `--sandbox` and the paths a user adds to or takes from the harness's view. */
export function withSandboxOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--sandbox <mode>",
        "isolated: the harness runs in its own PID, user and mount namespaces, sees the system read-only, its workspace and HOME writable, and nothing of the runner (the default on Linux); none: no isolation (said on stderr with what it gives up)",
      )
        .choices([...SANDBOX_MODES])
        .default(defaultSandboxMode()),
    )
    .option(
      "--sandbox-read <path>",
      "isolated: also show this path to the harness, read-only (repeatable)",
      existing,
      [],
    )
    .option(
      "--sandbox-write <path>",
      "isolated: also show this path to the harness, writable (repeatable)",
      existing,
      [],
    )
    .option(
      "--sandbox-hide <path>",
      "isolated: never show this path to the harness, even inside a visible folder (repeatable)",
      anyPath,
      [],
    );
}

/** The prp-runnerd flags that carry a controller's sandbox flags, plus paths it hides itself. */
export function sandboxRunnerdArgs(flags: SandboxFlags, hidden: string[] = []): string[] {
  return [
    "--sandbox",
    flags.sandbox,
    ...flags.sandboxRead.flatMap((p) => ["--sandbox-read", p]),
    ...flags.sandboxWrite.flatMap((p) => ["--sandbox-write", p]),
    ...[...flags.sandboxHide, ...hidden].flatMap((p) => ["--sandbox-hide", p]),
  ];
}
