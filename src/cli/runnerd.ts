#!/usr/bin/env node
import { join } from "node:path";
import { Command } from "commander";
import { packageRoot } from "../contract/package-root.js";
import { MAX_PROTOCOL_VERSION, MIN_PROTOCOL_VERSION } from "../contract/versions.js";
import { BatchedLineWriter } from "../harness/batched-writer.js";
import { BoundedLineReader } from "../harness/line-reader.js";
import { loadScript, resolveScriptPath } from "../harness/script-file.js";
import { LocalRunner } from "../runner/local-runner.js";
import { parseNonNegativeInt, parsePositiveInt } from "./options.js";
import { packageVersion } from "./package-info.js";

interface RunnerdOptions {
  local?: boolean;
  buildMetadata?: boolean;
  runId?: string;
  sessionId?: string;
  runnerId?: string;
  script?: string;
  fakeHarness?: string;
  delayMs?: number;
  logMaxLines: number;
  logMaxBytes: number;
  harnessMaxLineBytes: number;
  controllerMaxLineBytes: number;
  commandHistoryLimit: number;
  shutdownGraceMs: number;
}

const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,159}$/;

const program = new Command("prp-runnerd")
  .description("the PRP runner daemon: owns one run's harness process group and reports what really happened")
  .version(packageVersion(), "-V, --version")
  .option("--local", "local (stdio) mode: PRP commands as JSONL on stdin, paperclip.runner.stream.v1 records on stdout")
  .option("--build-metadata", "print this binary's contract versions and transport modes as JSON, then exit")
  .option("--run-id <id>", "the run this runner serves")
  .option("--session-id <id>", "the normalized session id")
  .option("--runner-id <id>", "this runner instance: the source of its events")
  .option("--script <name|file>", "the fake harness script (a file, or a scenario name)")
  .option("--fake-harness <path>", "an executable harness to start with --script FILE (default: this package's fake harness)")
  .option("--delay-ms <n>", "passed to the harness: every delay step takes this long", parseNonNegativeInt)
  .option("--log-max-lines <n>", "lines kept in the harness log tail", parsePositiveInt, 32)
  .option("--log-max-bytes <n>", "bytes kept in the harness log tail", parsePositiveInt, 16_384)
  .option("--harness-max-line-bytes <n>", "longest harness stdout line; a longer one is a protocol violation", parsePositiveInt, 65_536)
  .option("--controller-max-line-bytes <n>", "longest command line on stdin; a longer one is refused", parsePositiveInt, 65_536)
  .option("--command-history-limit <n>", "command fingerprints kept for duplicate detection", parsePositiveInt, 4096)
  .option("--shutdown-grace-ms <n>", "time between SIGTERM and SIGKILL to the harness group", parseNonNegativeInt, 100)
  .addHelpText(
    "after",
    `
Local mode reads PRP commands (v1-v3) on stdin, one JSON per line, and writes one
paperclip.runner.stream.v1 record per line on stdout: each PRP event, and a receipt
(accepted, duplicate or rejected) for each command. Diagnostics go to stderr. The run
ends with exactly one run.terminal, then the runner exits 0. EOF on stdin closes the
run (controller_closed); SIGTERM or SIGINT cancels it. No harness process outlives the runner.

Example:
  prp-runnerd --local --run-id run_1 --session-id session_1 --runner-id runner_1 --script happy-path`,
  );

program.parse(process.argv);
const opts = program.opts<RunnerdOptions>();

if (opts.buildMetadata) {
  console.log(JSON.stringify({ binaryContractVersion: 2, prp: { min: MIN_PROTOCOL_VERSION, max: MAX_PROTOCOL_VERSION }, transportModes: ["stdio_local"], version: packageVersion() }));
  process.exit(0);
}
if (!opts.local) program.error("choose a mode: --local (durable mode with --connect-url is not part of this build yet)", { exitCode: 2 });
for (const key of ["runId", "sessionId", "runnerId", "script"] as const) {
  if (!opts[key]) program.error(`--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} is required in --local mode`, { exitCode: 2 });
}
for (const key of ["runId", "sessionId", "runnerId"] as const) {
  if (!ID.test(opts[key]!)) program.error(`--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} must match ${ID.source}`, { exitCode: 2 });
}
let scriptPath = "";
try {
  scriptPath = resolveScriptPath(opts.script!);
} catch (err) {
  program.error((err as Error).message, { exitCode: 2 });
}
const loaded = loadScript(scriptPath);
if (!loaded.ok) program.error(`script refused: ${loaded.error.code} at ${loaded.error.path || "/"}: ${loaded.error.message}`, { exitCode: 2 });

const harnessArgs = ["--script", scriptPath, ...(opts.delayMs !== undefined ? ["--delay-ms", String(opts.delayMs)] : [])];
const harness = opts.fakeHarness
  ? { command: opts.fakeHarness, args: harnessArgs }
  : { command: process.execPath, args: [join(packageRoot(), "bin/prp.js"), "fake-harness", ...harnessArgs] };

const stdout = new BatchedLineWriter(process.stdout);
const runner = new LocalRunner(
  {
    runId: opts.runId!, sessionId: opts.sessionId!, runnerId: opts.runnerId!, harness,
    harnessMaxLineBytes: opts.harnessMaxLineBytes, logMaxLines: opts.logMaxLines, logMaxBytes: opts.logMaxBytes,
    commandHistoryLimit: opts.commandHistoryLimit, shutdownGraceMs: opts.shutdownGraceMs,
  },
  {
    write: (line) => stdout.write(line),
    onDrain: (resume) => stdout.onDrain(resume),
  },
);

const reader = new BoundedLineReader(opts.controllerMaxLineBytes);
const feed = (events: ReturnType<BoundedLineReader["push"]>) => {
  for (const e of events) if (e.kind === "line") runner.acceptLine(e.text); else runner.acceptOversizeLine(e.bytes);
};
process.stdin.on("data", (chunk: Buffer) => feed(reader.push(chunk)));
process.stdin.on("end", () => {
  feed(reader.end());
  runner.controllerClosed();
});

let signalled: NodeJS.Signals | null = null;
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    signalled ??= signal;
    runner.cancel();
  });
}

await runner.done;
process.stdin.pause();
const code = signalled ? 128 + (signalled === "SIGINT" ? 2 : 15) : 0;
stdout.flush(() => process.exit(code));
