/**
 * `npm run bench:runner`: events per second for a harness emitting 50,000 item.delta events
 * through the supervisor and the local runner to stdout, against two baselines measured in the
 * same rounds of this process: the same number of lines of the same size piped through `cat`,
 * and the contract `decode` alone on the runner's own item.delta events (the project's target
 * is a runner rate of at least 0.3× the decode rate; printed, never enforced).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decode } from "../src/contract/decode.js";
import { packageRoot } from "../src/contract/package-root.js";
import { SupervisedProcess } from "../src/harness/supervisor.js";
import { writeScript } from "./fake-script.js";
import { compare, fmt, median } from "./measure.js";

const EVENTS = 50_000;
const ROUNDS = 3;
/** Events kept from the stream for the decode baseline: enough to vary, few enough to stay in cache like the runner's. */
const DECODE_SAMPLE = 1_000;
const TARGET = 0.3;
const AT = "2026-08-07T12:00:00.000Z";
const dir = mkdtempSync(join(tmpdir(), "prp-bench-runner-"));
const scriptPath = join(dir, "deltas.json");
writeScript(
  scriptPath,
  "bench-deltas",
  Array.from({ length: EVENTS }, (_, i) => ({
    kind: "event",
    event_type: "item.delta",
    item_id: "item_1",
    payload: { text: `token ${i} ` },
  })),
);

const EVENT_RECORD = '{"schema":"paperclip.runner.stream.v1","kind":"event","event":';

/**
 * Seconds from the first command to run.terminal (startup included), seconds from the first
 * item.delta to run.terminal (the path alone, once harness and runner are up), the stream bytes
 * seen, and the JSON of the first item.delta events. The reader here only counts lines, as the
 * `cat` baseline does: what is measured is the runner, not a controller's own checks.
 */
async function throughRunner(): Promise<{
  seconds: number;
  steadySeconds: number;
  lines: number;
  bytes: number;
  deltas: string[];
}> {
  let lines = 0;
  let bytes = 0;
  const deltas: string[] = [];
  let terminal = "";
  let firstDelta = 0n;
  let resolveTerminal!: () => void;
  const ended = new Promise<void>((r) => (resolveTerminal = r));
  const runner = new SupervisedProcess({
    command: process.execPath,
    args: [
      join(packageRoot(), "bin/prp-runnerd.js"),
      "--local",
      "--run-id",
      "run_bench",
      "--session-id",
      "session_bench",
      "--runner-id",
      "runner_bench",
      "--script",
      scriptPath,
    ],
    maxLineBytes: 2 * 1024 * 1024,
    graceMs: 2_000,
    onLine: (line) => {
      lines++;
      bytes += line.length + 1;
      if (deltas.length < DECODE_SAMPLE && line.startsWith(EVENT_RECORD) && line.includes('"eventType":"item.delta"')) {
        if (deltas.length === 0) firstDelta = process.hrtime.bigint();
        deltas.push(line.slice(EVENT_RECORD.length, -1));
      }
      if (line.includes('"eventType":"run.terminal"')) {
        terminal = line;
        resolveTerminal();
      }
    },
    onOversize: (n) => {
      throw new Error(`a runner line of ${n} bytes`);
    },
  });
  const start = process.hrtime.bigint();
  for (const [seq, type] of [
    [1, "run.prepare"],
    [2, "session.open"],
    [3, "turn.start"],
  ] as const) {
    runner.writeLine(
      JSON.stringify({
        schema: "paperclip.prp.command.v1",
        commandId: `c${seq}`,
        controllerSeq: seq,
        type,
        issuedAt: AT,
        payload: {},
      }),
    );
  }
  await ended;
  const end = process.hrtime.bigint();
  runner.closeStdin();
  await runner.exited;
  // A failed run (on a loaded machine the harness can miss its 2 s ready deadline while it loads the script) measures nothing.
  if (deltas.length === 0) throw new Error(`the run streamed no item.delta: ${terminal.slice(0, 400)}`);
  return { seconds: Number(end - start) / 1e9, steadySeconds: Number(end - firstDelta) / 1e9, lines, bytes, deltas };
}

/** Events per second of `decode` alone (parse, schema, post-checks) on the given event lines: one short interleaved round. */
function decodeRate(lines: string[]): number {
  return compare(
    [{ name: "decode", items: lines, fn: (line: string) => decode(line, { kind: "event" }).ok }],
    1,
    500,
  )[0]!.perSecond;
}

/** Seconds to pipe the same number of lines of the same average size through cat. */
async function throughCat(lines: number, bytes: number): Promise<number> {
  const line = `${"x".repeat(Math.max(1, Math.round(bytes / lines) - 1))}\n`;
  const file = join(dir, "lines.txt");
  writeFileSync(file, line.repeat(lines));
  const start = process.hrtime.bigint();
  await new Promise<void>((resolve, reject) => {
    const cat = spawn("cat", [file], { stdio: ["ignore", "pipe", "inherit"] });
    let seen = 0;
    cat.stdout.on("data", (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) seen++;
    });
    cat.on("close", () => (seen === lines ? resolve() : reject(new Error(`cat gave ${seen} lines`))));
  });
  return Number(process.hrtime.bigint() - start) / 1e9;
}

try {
  const runner: number[] = [];
  const steady: number[] = [];
  const cat: number[] = [];
  const decoded: number[] = [];
  let shape = { lines: 0, bytes: 0 };
  for (let r = 0; r < ROUNDS; r++) {
    const res = await throughRunner();
    shape = res;
    runner.push(res.lines / res.seconds);
    steady.push(EVENTS / res.steadySeconds);
    cat.push(res.lines / (await throughCat(res.lines, res.bytes)));
    decoded.push(decodeRate(res.deltas));
  }
  const ratio = median(steady) / median(decoded);
  console.log(
    `runner: ${EVENTS} item.delta events from a fake harness, ${shape.lines} stream records, ${fmt(shape.bytes / shape.lines)} bytes each (median of ${ROUNDS})`,
  );
  console.log(
    `  supervisor + runner + codec -> stdout   ${fmt(median(runner)).padStart(12)} events/s  (from the first command: process startup included)`,
  );
  console.log(
    `  the same, once running                  ${fmt(median(steady)).padStart(12)} events/s  (first item.delta to run.terminal)`,
  );
  console.log(`  the same lines through cat              ${fmt(median(cat)).padStart(12)} lines/s`);
  console.log(
    `  contract decode alone, same events      ${fmt(median(decoded)).padStart(12)} events/s  (${fmt(DECODE_SAMPLE)} of the runner's item.delta lines)`,
  );
  console.log(
    `cat is ${(median(cat) / median(runner)).toFixed(1)}x the runner's rate (the runner parses, validates and re-frames every event)`,
  );
  console.log(
    `runner (once running) / decode = ${ratio.toFixed(2)}x (target >= ${TARGET}x: ${ratio >= TARGET ? "met" : "not met"})`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
