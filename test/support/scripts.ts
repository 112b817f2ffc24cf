import assert from "node:assert/strict";
import { loadScript, resolveScriptPath, type LoadedScript } from "../../src/harness/script-file.js";

/**
 * prp-runnerd flags for tests about delivery, kills or judges rather than start-up speed: on a
 * loaded machine a harness can start slower than the protocol's 2 s to say ready.
 */
export const PATIENT_HARNESS = ["--harness-ready-ms", "30000"];

/** The `prp` commands that start a runner and take `--harness-ready-ms`. */
const STARTS_RUNNER = new Set(["run", "demo", "fault", "worker"]);

/**
 * `args` with PATIENT_HARNESS added when they start a runner and set no deadline of their own,
 * so a shared helper is patient by default and a test of the deadline still sets its own.
 * `prp` args are recognised by their command; `prp-runnerd` args always start a runner.
 */
export function withPatientHarness(args: readonly string[], program: "prp" | "prp-runnerd" = "prp"): string[] {
  if (program === "prp" && !STARTS_RUNNER.has(args[0] ?? "")) return [...args];
  if (
    args.some((a) => a === "--harness-ready-ms" || a.startsWith("--harness-ready-ms=") || a === "--help" || a === "-h")
  )
    return [...args];
  // Before a `--`, after which the arguments are not prp's.
  const end = args.indexOf("--");
  return end === -1 ? [...args, ...PATIENT_HARNESS] : [...args.slice(0, end), ...PATIENT_HARNESS, ...args.slice(end)];
}

/** A scenario script (a name) or a script file (a path), loaded; the test fails if it does not load. */
export function loadedScript(name: string): LoadedScript {
  const loaded = loadScript(resolveScriptPath(name));
  assert.ok(loaded.ok, `the script ${name} loads`);
  return loaded.value;
}
