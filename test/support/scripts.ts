import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
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

/**
 * A fake-harness script in `dir` that starts an item, then sleeps 10 min without a word, deaf to
 * commands: a stall's interrupt does not end it, only the cancel after the grace. Its path.
 */
export function writeSleeperScript(dir: string): string {
  const script = join(dir, "sleeper.json");
  writeFileSync(
    script,
    JSON.stringify({
      schema: "paperclip.fake_harness.script.v1",
      name: "sleeper",
      description: "Starts an item, then sleeps without a word, deaf to commands.",
      steps: [
        { kind: "event", event_type: "item.started", item_id: "item_1", payload: { kind: "command", text: "" } },
        { kind: "delay", milliseconds: 600_000 },
      ],
    }),
  );
  return script;
}
