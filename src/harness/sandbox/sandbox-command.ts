import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { packageRoot } from "../../contract/package-root.js";
import { mountPlan, planArgs } from "./mount-plan.js";
import { LAUNCH, SETUP } from "./sandbox-setup.js";
import type { SandboxPaths } from "./sandbox-policy.js";
import { unshareCommand } from "./sandbox-probe.js";

const INIT = fileURLToPath(new URL("./sandbox-init.js", import.meta.url));

/**
 * This package and the modules it runs with (the fake harness, the activity helper and PID 1 are
 * its code): its own node_modules wherever a link leads, and every node_modules folder above it,
 * where npm puts the dependencies of a package installed into another project.
 */
function ownRuntime(): string[] {
  const root = packageRoot();
  const folders = [root];
  const own = join(root, "node_modules");
  if (existsSync(own)) folders.push(realpathSync(own));
  for (let dir = root; dirname(dir) !== dir; dir = dirname(dir))
    if (basename(dir) === "node_modules") folders.push(dir);
  return folders;
}

export interface SandboxedCommand {
  command: string;
  args: string[];
  /** Removes the empty folder the root was mounted on (in the sandbox's own mount namespace). */
  cleanup: () => void;
}

/**
 * The command line that runs `command args` in the sandbox with this view; the working
 * directory and every path of `paths` are absolute. Paths with a newline are refused: the setup
 * script keeps its list of hidden folders one a line.
 */
export function sandboxedCommand(paths: SandboxPaths, cwd: string, command: string, args: string[]): SandboxedCommand {
  // PID 1 is this package's init run by this node: both stay readable whatever the caller asked.
  const plan = mountPlan({
    ...paths,
    readable: [...ownRuntime(), dirname(dirname(realpathSync(process.execPath))), ...paths.readable],
  });
  const bad = [cwd, ...plan.map((o) => o.path)].find((p) => p.includes("\n"));
  if (bad !== undefined)
    throw new Error(`the sandbox cannot show or hide a path with a newline: ${JSON.stringify(bad)}`);
  const root = mkdtempSync(join(tmpdir(), "prp-sandbox-"));
  // The launcher may start nothing before PID 1, so the runner makes its FIFO (see LAUNCH).
  execFileSync("mkfifo", ["-m", "600", join(root, ".prp-alive")]);
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  const unshare = unshareCommand();
  return {
    command: unshare,
    args: [
      // No --fork: the launcher forks PID 1 itself, so that it can let go of the harness's stdio.
      "--user",
      "--map-root-user",
      "--mount",
      "--pid",
      "--propagation",
      "private",
      "/bin/sh",
      "-c",
      LAUNCH,
      "prp-sandbox",
      SETUP,
      root,
      cwd,
      String(uid),
      String(gid),
      process.execPath,
      INIT,
      unshare,
      ...planArgs(plan),
      "--",
      command,
      ...args,
    ],
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}
