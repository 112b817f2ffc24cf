import assert from "node:assert/strict";
import { loadScript, resolveScriptPath, type LoadedScript } from "../../src/harness/script-file.js";

/**
 * prp-runnerd flags for tests about delivery, kills or judges rather than start-up speed: on a
 * loaded machine a harness can start slower than the protocol's 2 s to say ready.
 */
export const PATIENT_HARNESS = ["--harness-ready-ms", "30000"];

/** A scenario script (a name) or a script file (a path), loaded; the test fails if it does not load. */
export function loadedScript(name: string): LoadedScript {
  const loaded = loadScript(resolveScriptPath(name));
  assert.ok(loaded.ok, `the script ${name} loads`);
  return loaded.value;
}
