import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { packageRoot } from "../../src/contract/package-root.js";
import { withPatientHarness } from "../support/scripts.js";

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the `prp` bin to completion (spawnSync waits for the child to exit) and returns its output.
 * A command that starts a runner gets the patient harness deadline unless `args` set one.
 */
export function runPrp(args: string[], options: { cwd?: string; input?: string } = {}): CliRun {
  const res = spawnSync(process.execPath, [join(packageRoot(), "bin/prp.js"), ...withPatientHarness(args)], {
    cwd: options.cwd ?? packageRoot(),
    input: options.input ?? "",
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Runs a `prp authority …` admin command with `--json` output against `store` and returns its parsed answer; it must exit 0. */
export function adminJson(store: readonly string[], args: string[]): Record<string, unknown> {
  const run = runPrp([...args, ...store]);
  if (run.status !== 0) throw new Error(`prp ${args.join(" ")} exited ${run.status}: ${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}
