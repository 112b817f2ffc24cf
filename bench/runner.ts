/**
 * `npm run bench:runner`: events per second for a harness emitting 50,000 item.delta events
 * through the supervisor and the local runner to stdout, against the same number of lines of
 * the same size piped through `cat`, measured in this process and printed as a ratio.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalRunnerClient } from "../src/runner/local-client.js";
import { fmt } from "./measure.js";

const EVENTS = 50_000;
const ROUNDS = 3;
const AT = "2026-08-07T12:00:00.000Z";
const dir = mkdtempSync(join(tmpdir(), "prp-bench-runner-"));
const scriptPath = join(dir, "deltas.json");
const result = { schema: "paperclip.run_result.v1", reportedWorkDisposition: "done", summary: "streamed", completionClaim: { contractRevision: "bench", objectiveSatisfied: true, criteria: [], remainingWork: [] }, evidence: [], verification: [], attentionRequests: [], artifacts: [] };
writeFileSync(scriptPath, JSON.stringify({
  schema: "paperclip.fake_harness.script.v1", name: "bench-deltas",
  steps: [
    ...Array.from({ length: EVENTS }, (_, i) => ({ kind: "event", event_type: "item.delta", item_id: "item_1", payload: { text: `token ${i} ` } })),
    { kind: "result", payload: result }, { kind: "event", event_type: "turn.completed", payload: {} }, { kind: "exit", code: 0 },
  ],
}));

/** Seconds from the first command to run.terminal, and the stream bytes seen. */
async function throughRunner(): Promise<{ seconds: number; lines: number; bytes: number }> {
  let lines = 0;
  let bytes = 0;
  let resolveTerminal!: () => void;
  const terminal = new Promise<void>((r) => (resolveTerminal = r));
  const client = new LocalRunnerClient({
    runId: "run_bench", sessionId: "session_bench", runnerId: "runner_bench", scriptPath,
    onEvent: (e) => { lines++; bytes += JSON.stringify(e).length + 60; if (e.eventType === "run.terminal") resolveTerminal(); },
    onReceipt: () => {},
    onBadLine: (l) => { throw new Error(`bad stream line: ${l.slice(0, 200)}`); },
  });
  const start = process.hrtime.bigint();
  for (const [seq, type] of [[1, "run.prepare"], [2, "session.open"], [3, "turn.start"]] as const) {
    client.sendRaw(JSON.stringify({ schema: "paperclip.prp.command.v1", commandId: `c${seq}`, controllerSeq: seq, type, issuedAt: AT, payload: {} }));
  }
  await terminal;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  client.close();
  await client.exited();
  return { seconds, lines, bytes };
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
    cat.stdout.on("data", (chunk: Buffer) => { for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) seen++; });
    cat.on("close", () => (seen === lines ? resolve() : reject(new Error(`cat gave ${seen} lines`))));
  });
  return Number(process.hrtime.bigint() - start) / 1e9;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
try {
  const runner: number[] = [];
  const cat: number[] = [];
  let shape = { lines: 0, bytes: 0 };
  for (let r = 0; r < ROUNDS; r++) {
    const res = await throughRunner();
    shape = res;
    runner.push(res.lines / res.seconds);
    cat.push(res.lines / (await throughCat(res.lines, res.bytes)));
  }
  console.log(`runner: ${EVENTS} item.delta events from a fake harness, ${shape.lines} stream records, ${fmt(shape.bytes / shape.lines)} bytes each (median of ${ROUNDS})`);
  console.log(`  supervisor + runner + codec -> stdout   ${fmt(median(runner)).padStart(12)} events/s`);
  console.log(`  the same lines through cat              ${fmt(median(cat)).padStart(12)} lines/s`);
  console.log(`cat is ${(median(cat) / median(runner)).toFixed(1)}x the runner's rate (the runner parses, validates and re-frames every event)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
