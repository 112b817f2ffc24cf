/**
 * The fake harness as the process a runner starts: `node fake-harness-process.js --script FILE
 * [--delay-ms N]`. It loads only what a harness needs — not the whole `prp` command line with
 * the authority, SQLite and WebSocket modules — so that it says ready well within the runner's
 * 2 s (runtime.md §4.1) on a busy machine. `prp fake-harness` is the same harness for people.
 */
import { parseArgs } from "node:util";
import { playFakeHarness } from "./play-fake-harness.js";
import { loadScript } from "./script-file.js";

const usage = (why: string): never => {
  process.stderr.write(`fake harness: ${why}\nusage: fake-harness-process.js --script FILE [--delay-ms N]\n`);
  process.exit(2);
};
function options(): { script: string; delayMs: number | undefined } {
  let values: { script?: string; "delay-ms"?: string };
  try {
    ({ values } = parseArgs({ options: { script: { type: "string" }, "delay-ms": { type: "string" } } }));
  } catch (err) {
    return usage((err as Error).message);
  }
  if (!values.script) return usage("--script is required");
  const delay = values["delay-ms"];
  if (delay !== undefined && !/^(0|[1-9][0-9]*)$/.test(delay))
    return usage(`--delay-ms must be a whole number, not ${JSON.stringify(delay)}`);
  return { script: values.script, delayMs: delay === undefined ? undefined : Number(delay) };
}

const { script, delayMs } = options();
const loaded = loadScript(script); // an unreadable or oversized script is a refusal, never a throw
if (!loaded.ok) usage(`script refused: ${loaded.error.code} at ${loaded.error.path || "/"}: ${loaded.error.message}`);
else await playFakeHarness(loaded.value.script, delayMs);
