/**
 * `npm run bench:acp`: agent_message_chunk notifications from the ACP test agent through the
 * driver (the tap, the SDK), the projection and the codec to the runner's stdout, in events per
 * second, as a ratio to the fake-harness path (item.delta lines through the same runner) in the
 * same rounds of this process. Printed, never enforced.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { packageRoot } from "../src/contract/package-root.js";
import { SupervisedProcess } from "../src/harness/supervisor.js";
import { writeScript } from "./fake-script.js";
import { fmt, median } from "./measure.js";

const CHUNKS = 10_000;
const ROUNDS = 3;
const AT = "2026-08-07T12:00:00.000Z";
const dir = mkdtempSync(join(tmpdir(), "prp-bench-acp-"));
const fakeScript = join(dir, "deltas.json");
writeScript(
  fakeScript,
  "bench-deltas",
  Array.from({ length: CHUNKS }, (_, i) => ({
    kind: "event",
    event_type: "item.delta",
    item_id: "item_1",
    payload: { text: `token ${i} ` },
  })),
);
const scenario = join(dir, "chunks.json");
writeFileSync(
  scenario,
  JSON.stringify({
    schema: "prp_kit.acp_test_agent.scenario.v1",
    name: "bench-chunks",
    description: "bench",
    steps: [{ kind: "chunks", count: CHUNKS, text: "token " }],
  }),
);
const agent = `${process.execPath} ${join(packageRoot(), "dist/src/harness/acp/test-agent-process.js")} --scenario ${scenario}`;

/** item.delta events per second from the first one to run.terminal, through prp-runnerd --local with these harness flags. */
async function deltasPerSecond(harnessArgs: string[]): Promise<number> {
  let deltas = 0;
  let first = 0n;
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
      "--harness-ready-ms",
      "60000",
      ...harnessArgs,
    ],
    maxLineBytes: 2 * 1024 * 1024,
    graceMs: 2_000,
    onLine: (line) => {
      if (line.includes('"eventType":"item.delta"') && deltas++ === 0) first = process.hrtime.bigint();
      if (line.includes('"eventType":"run.terminal"')) resolveTerminal();
    },
    onOversize: (n) => {
      throw new Error(`a runner line of ${n} bytes`);
    },
  });
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
        payload: type === "turn.start" ? { text: "go" } : {},
      }),
    );
  }
  await ended;
  const end = process.hrtime.bigint();
  await runner.terminate();
  if (deltas !== CHUNKS) throw new Error(`expected ${CHUNKS} item.delta events, saw ${deltas}`);
  return CHUNKS / (Number(end - first) / 1e9);
}

try {
  const acp: number[] = [];
  const fake: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    acp.push(await deltasPerSecond(["--harness", "acp", "--agent-command", agent, "--agent-cwd", dir]));
    fake.push(await deltasPerSecond(["--script", fakeScript]));
  }
  console.log(
    `acp: ${fmt(CHUNKS)} agent_message_chunk notifications → item.delta events, first delta to run.terminal (median of ${ROUNDS})`,
  );
  console.log(`  ACP test agent → driver → projection → codec → stdout   ${fmt(median(acp)).padStart(10)} events/s`);
  console.log(`  fake harness → driver → codec → stdout                  ${fmt(median(fake)).padStart(10)} events/s`);
  console.log(`acp / fake = ${(median(acp) / median(fake)).toFixed(2)}x`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
