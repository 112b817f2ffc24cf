import { addStallOptions, stallArgs, type StallFlags } from "./stall-options.js";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { eventLine } from "./event-line.js";
import { terminalSummary } from "./stop-line.js";
import { printableJson, visible, visibleLines } from "./terminal-text.js";
import { RUNNER_ID_PATTERN, sequencedId } from "../contract/ids.js";
import type { PrpEvent } from "../contract/kinds.js";
import { BundleWriter, bundleFileProblems } from "../bundle/native-execution.js";
import { RecordCheck, type RecordProblem } from "../bundle/record-check.js";
import type * as T from "../contract/generated/types.js";
import { LocalRunnerClient } from "../runner/local-client.js";
import { credentialRunnerdArgs } from "../runner/spawn.js";
import { STOP_SIGNALS, signalExitStatus } from "../runner/stop-signals.js";
import type { CommandReceipt } from "../runner/stream.js";
import {
  CREDENTIAL_FILE_HELP,
  CREDENTIAL_PROVIDER_HELP,
  parseCredentialFile,
  parseCredentialProvider,
} from "./credential-options.js";
import {
  agentChoice,
  agentFlagsOf,
  agentRunnerdArgs,
  permissionPolicyOption,
  withAgentOptions,
  type AgentOptionValues,
} from "./agent-options.js";
import {
  agentCwdRefusal,
  SANDBOX_UNAVAILABLE_EXIT,
  sandboxPolicy,
  type SandboxFlags,
} from "../harness/sandbox/sandbox-policy.js";
import { sandboxRunnerdArgs, withSandboxOptions } from "./sandbox-options.js";
import { loadAnswers, promptForResolution, type PendingRequest, type Resolution } from "./answers.js";
import { newIdSuffix } from "../contract/id-suffix.js";
import {
  HARNESS_READY_HELP,
  harnessReadyArgs,
  parseNonNegativeInt,
  parsePositiveInt,
  parseProtocolVersion,
} from "./options.js";
import { agentTarget, scriptTarget } from "./run-target.js";
import { LiveTurn } from "./live-turn.js";
import { Spinner } from "./spinner.js";
import { cutText } from "../contract/text-cut.js";
import { otelVariables } from "../telemetry/tracing-config.js";

interface RunOptions extends SandboxFlags, AgentOptionValues, StallFlags {
  script?: string;
  answer?: string;
  json?: boolean;
  delayMs?: number;
  runId?: string;
  out: string;
  duplicateTurnCommand?: boolean;
  protocolMax: number;
  harnessReadyMs?: number;
  credentialFile?: string;
  credentialProvider?: string;
  runnerd?: string;
}

export function registerRun(program: Command): void {
  withSandboxOptions(
    withAgentOptions(
      addStallOptions(program.command("run"), "passed to prp-runnerd: ")
        .description(
          "run a fake harness script, or a real agent (--agent NAME or --agent-command CMD), through the local runner, as a controller would, and write its native execution bundle",
        )
        .option(
          "--script <name|file>",
          "a scenario name (happy-path, permission-input, interactive-question, interrupted, error, duplicate-terminal, linger, oversized-line, goals, credentials-refresh, runtime-activity) or a script file",
        ),
      "instead of --script",
      permissionPolicyOption(
        undefined,
        "with an agent: who answers its permission requests and questions: ask (you, or --answer), deny, allow-reads (questions are cancelled under both), forbid (the agent must never ask: a request fails the run) (default: ask at a terminal or with --answer, else deny)",
      ),
    ),
  )
    .option("--answer <file>", "answers to the run's requests: a JSON object from request id to resolution")
    .option("--json", "print only the PRP events, one JSON per line, on stdout (the summary goes to stderr)")
    .option("--delay-ms <n>", "use this delay for every delay step of the script", parseNonNegativeInt)
    .option("--run-id <id>", "the run id (default: a new one)")
    .option("--out <dir>", "where runs are written: <dir>/runs/<runId>/", ".prp")
    .option(
      "--protocol-max <n>",
      "the runner's protocol version, 1-3: 2 and 3 add session goals, but a native execution bundle carries v1 events only, so such a run has none (default 1)",
      parseProtocolVersion,
      1,
    )
    .option("--harness-ready-ms <n>", HARNESS_READY_HELP, parsePositiveInt)
    .option("--duplicate-turn-command", "also send a second turn.start, which the runner must refuse")
    .option(
      "--runnerd <path>",
      "run this prp-runnerd instead of this package's own (another build): its stream is checked like any other",
    )
    .option(
      "--credential-file <path>",
      `${CREDENTIAL_FILE_HELP} (default with --script: <out>/runs/<runId>/credentials/auth.json, which the credentials-refresh scenario writes)`,
      parseCredentialFile,
    )
    .option("--credential-provider <id>", CREDENTIAL_PROVIDER_HELP, parseCredentialProvider)
    .addHelpText(
      "after",
      `
Sends run.prepare, session.open and turn.start to prp-runnerd --local and shows each event
as the runner reports it. Requests are answered from --answer, or asked at the terminal;
without either, the run is cancelled. Scripts that wait for an interrupt get one after
their other steps. Ctrl-C sends turn.interrupt; a second Ctrl-C sends run.cancel.

run.prepare opts in to credential observation (observeCredentials: true): each change
of the observed credential file is shown as auth.credentials.updated with its revision,
never the file's content or path.

Ends with the terminal states, the reconciliation reason, the result and the size of the
record, and writes .prp/runs/<runId>/native-execution.json with its transcript and
artifacts. Exit status: 0 when the run succeeded, 1 when it failed or was cancelled,
2 on bad usage, 3 when the runner's output was not one run's record (an event out of
sequence, a repeated id, a second terminal, anything after the terminal, another run's
event, a line that is not a record, a runner that died after the terminal instead of
exiting): nothing it said is believed and no bundle is written. 8 when the harness sandbox
cannot be set up here (see --sandbox).
Each event is checked and written to the bundle as it arrives; memory does not grow with
the run.

The harness runs in a sandbox by default (Linux): it works in --agent-cwd (default: this
directory) and HOME, sees the system read-only, and nothing of the runner or this controller.

With --agent NAME (a named agent of the catalog: prp agents list; installed in --agents-dir)
or --agent-command CMD (any ACP agent's own command line), the runner drives a real agent over
the Agent Client Protocol: its answer streams live, its tool calls, plans and diffs are shown as
they happen, and its permission requests and questions are asked at the terminal (or decided by
--permission-policy). An ACP agent cannot claim its work done: an ended turn proposes
needs_review. An unknown name is refused (exit 2); a named agent that is not installed ends the
run (agent_not_installed). Agents are logged in with your own credentials.

Examples:
  prp run --agent claude --prompt "fix the failing test"
  prp run --agent-command "my-acp-agent --stdio" --prompt "fix the failing test"
  prp run --script happy-path
  prp run --script goals --protocol-max 3
  prp run --script credentials-refresh
  prp run --script permission-input --answer answers.json
  prp run --json --script error --delay-ms 0 | prp replay --events -`,
    )
    .action(async (opts: RunOptions) => {
      process.exitCode = await runScenario(program, opts);
    });
}

async function runScenario(program: Command, opts: RunOptions): Promise<number> {
  const fail = (message: string) => program.error(message, { exitCode: 2 });
  const agent = agentChoice(program, opts);
  if (!opts.script === !agent)
    fail("choose one: --script <name|file> (a fake harness), or --agent NAME or --agent-command CMD (an ACP agent)");
  if (agent && !opts.prompt) fail("an agent (--agent or --agent-command) needs --prompt <text>");
  if (
    !agent &&
    (opts.prompt || opts.agentCwd || opts.agentEnv || opts.permissionPolicy || opts.agentIdleMs || opts.agentModel)
  )
    fail(
      "--prompt, --agent-cwd, --agent-env, --agent-idle-ms, --agent-model and --permission-policy go with --agent or --agent-command",
    );
  const target = agent ? agentTarget(agent, opts.prompt!) : scriptTarget(program, opts.script!);
  let answers = new Map<string, Resolution>();
  try {
    if (opts.answer) answers = loadAnswers(opts.answer);
  } catch (err) {
    fail((err as Error).message);
  }
  const runId = opts.runId ?? `run_${newIdSuffix()}`;
  if (!RUNNER_ID_PATTERN.test(runId)) fail(`--run-id "${runId}" is not a valid id`);
  if (opts.credentialProvider && !opts.credentialFile) fail("--credential-provider goes with --credential-file");
  // The runner refuses it too; refused here, no runner is started and no run folder made.
  const cwdRefused = agent ? agentCwdRefusal(opts.agentCwd ?? process.cwd(), opts.sandboxHide) : null;
  if (cwdRefused) fail(cwdRefused);
  const credentialFile =
    opts.credentialFile ?? (agent ? undefined : resolve(opts.out, "runs", runId, "credentials", "auth.json"));

  const sandboxed = sandboxPolicy(opts, [], (line) => process.stderr.write(`prp: ${line}\n`));
  if (!sandboxed.ok) {
    process.stderr.write(`prp: ${sandboxed.message}\n`);
    return SANDBOX_UNAVAILABLE_EXIT;
  }

  const tty = !opts.json && process.stdout.isTTY === true;
  // Without a person or an answer file to ask, an agent's permission requests are refused by policy.
  const policy = opts.permissionPolicy ?? (tty || opts.answer ? "ask" : "deny");
  // Every line shown holds text the agent chose (a result's summary, a reason): controls made visible.
  const show = (line: string) => (opts.json ? process.stderr : process.stdout).write(`${visible(line)}\n`);
  const spinner = new Spinner(tty ? process.stdout : null);
  const sessionId = `session_${runId}`;
  // The runner's stdout is believed only while it is one run's record: each event is checked as
  // it comes (the local runner names event N by N, so uniqueness costs nothing per event) and
  // goes straight to the bundle's files; nothing proportional to the run is kept.
  const check = new RecordCheck({
    pathOf: (i) => `/events/${i}`,
    firstSeq: 1,
    runId,
    sessionId,
    idOf: (seq) => sequencedId("event", runId, seq, 3),
  });
  const writer = new BundleWriter(join(opts.out, "runs", runId), {
    runId,
    caseId: target.caseId,
    attemptId: "attempt_1",
    scriptBytes: target.bytes,
    driverKind: target.driverKind,
    config: {
      ...target.config,
      ...(agent ? { permissionPolicy: policy } : {}),
      delayMs: opts.delayMs ?? null,
      answers: Object.fromEntries(answers),
    },
  });
  // Set by the client's callbacks (hence the casts: the compiler does not see them run).
  let broken = null as RecordProblem | null;
  let terminal = null as T.PRPRunTerminal | null;
  let result = null as { reportedWorkDisposition?: string; summary?: string } | null;
  const live = new LiveTurn((text) => {
    spinner.clear();
    process.stdout.write(text);
  });
  const started = Date.now();
  let interruptSent = false;
  let cancelSent = false;
  let resolveTerminal!: () => void;
  const terminalSeen = new Promise<void>((r) => (resolveTerminal = r));

  const client: LocalRunnerClient = new LocalRunnerClient({
    runId,
    sessionId,
    runnerId: `runner_${runId}`,
    // OTEL_* asks for traces: the runner's prp.run span is then the root of the run's trace.
    env: otelVariables(process.env),
    ...(opts.runnerd ? { runnerd: resolve(opts.runnerd) } : {}),
    ...(target.scriptPath ? { scriptPath: target.scriptPath } : {}),
    extraArgs: [
      "--protocol-max",
      String(opts.protocolMax),
      ...harnessReadyArgs(opts.harnessReadyMs),
      ...stallArgs(opts),
      ...(agent ? agentRunnerdArgs(agentFlagsOf(agent, opts, policy)) : []),
      ...credentialRunnerdArgs(credentialFile, opts.credentialProvider),
      ...sandboxRunnerdArgs(opts),
    ],
    ...(opts.delayMs !== undefined ? { delayMs: opts.delayMs } : {}),
    onEvent: (event) => {
      if (broken) return;
      const problem = check.accept(event);
      if (problem) return refuseRecord(problem);
      writer.add(event);
      if (event.eventType === "run.result.proposed") result ??= event.payload as unknown as typeof result;
      spinner.clear();
      if (opts.json) process.stdout.write(`${printableJson(JSON.stringify(event))}\n`);
      else if (agent && event.eventType !== "auth.credentials.updated") live.show(event);
      else show(eventLine(event));
      void react(event);
    },
    onReceipt: (receipt: CommandReceipt) => {
      if (receipt.status === "accepted") return;
      spinner.clear();
      process.stderr.write(
        `prp run: ${receipt.type ?? "command"} ${receipt.commandId ?? ""} ${receipt.status}${receipt.code ? `: ${receipt.code}: ${visible(String(receipt.reason))}` : ""}\n`,
      );
      // A refused answer leaves the harness waiting on its request: end the run instead of hanging.
      if (receipt.status === "rejected" && receipt.type === "request.resolve") cancel();
    },
    // The runner writes nothing but stream records: anything else is someone else's writing.
    onBadLine: (line) =>
      refuseRecord({
        code: "not_a_record",
        path: `/events/${check.count}`,
        message: `the runner's stdout had a line that is not a stream record: ${cutText(line, 200)}`,
      }),
  });
  /** The stream broke the binding rules: nothing it says is believed, the runner is ended and no bundle is written. */
  const refuseRecord = (problem: RecordProblem) => {
    if (broken) return;
    broken = problem;
    void client.terminate();
    resolveTerminal();
  };

  const react = async (event: PrpEvent) => {
    const payload = event.payload as Record<string, unknown>;
    if (event.eventType === "run.terminal") {
      terminal = event.payload as unknown as T.PRPRunTerminal;
      client.close();
      resolveTerminal();
    } else if (
      event.eventType === "runtime.phase.changed" &&
      payload.phase === "awaiting_interrupt" &&
      !interruptSent
    ) {
      interruptSent = true;
      client.send("turn.interrupt", { reason: "operator" });
    } else if (event.eventType === "runtime_request.created" && !(agent && policy !== "ask")) {
      const request = payload.request as PendingRequest;
      const resolution = answers.get(request.requestId) ?? (tty ? await ask(request) : null);
      if (resolution)
        client.send("request.resolve", { requestId: request.requestId, turnId: event.turnId, resolution });
      else {
        process.stderr.write(
          `prp run: request ${request.requestId} ("${visible(request.prompt)}") needs an answer: pass --answer FILE or run at a terminal; cancelling the run\n`,
        );
        cancel();
      }
    }
  };
  const ask = async (request: PendingRequest) => {
    spinner.stop();
    const resolution = await promptForResolution(request, process.stdout);
    spinner.start();
    return resolution;
  };
  const cancel = () => {
    if (cancelSent || terminal) return;
    cancelSent = true;
    client.send("run.cancel", { reason: "operator" });
  };
  const onSigint = () => {
    spinner.clear();
    if (!interruptSent) {
      interruptSent = true;
      show("  ^C  sending turn.interrupt (Ctrl-C again cancels the run)");
      client.send("turn.interrupt", { reason: "operator" });
    } else {
      show("  ^C  sending run.cancel");
      cancel();
    }
  };
  process.on("SIGINT", onSigint);

  client.send("run.prepare", { workspace: "local", observeCredentials: true });
  client.send("session.open", { reuse: "new_per_run" });
  client.send("turn.start", { text: target.turnText });
  if (opts.duplicateTurnCommand) client.send("turn.start", { text: "a second turn.start: the runner must refuse it" });
  spinner.start();

  const exit = await Promise.race([client.exited(), terminalSeen.then(() => client.exited())]);
  spinner.stop();
  live.end();
  process.off("SIGINT", onSigint);
  // After its terminal a local runner exits 0, or 128+n when a stop signal cancelled the run. A
  // runner that died otherwise did not confirm the end of its stream: a terminal forged just
  // before the runner was killed would otherwise be the last word.
  const cleanExits = [0, ...STOP_SIGNALS.map(signalExitStatus)];
  if (!broken && terminal && (exit.exitCode === null || !cleanExits.includes(exit.exitCode))) {
    broken = {
      code: "unconfirmed_end",
      path: `/events/${check.count}`,
      message: `the runner ended ${exit.signal ? `by ${exit.signal}` : `with status ${exit.exitCode}`} after the stream's run.terminal, not as it does after writing its own: the end of the stream is not known to be the runner's`,
    };
  }
  if (broken) {
    writer.discard();
    const { code, path, message } = broken;
    process.stderr.write(
      `prp run: the runner's output was not a valid record of run ${runId}: ${code} at ${path}: ${visible(message)}\nNothing it reported is believed and no bundle was written.\n`,
    );
    return 3;
  }
  // The terminal is known whenever the record is whole; the test also tells the compiler so.
  if (check.finish() || !terminal) {
    writer.discard();
    process.stderr.write(
      `prp run: the runner exited (${exit.exitCode ?? exit.signal}) without a run.terminal\n${visibleLines(client.stderrTail().join("\n"))}\n`,
    );
    return 1;
  }

  const path = writer.refusal ?? writeBundle();
  function writeBundle(): string {
    const written = writer.finish(Date.now() - started);
    const problems = bundleFileProblems(written.path, written.files);
    if (problems.length > 0)
      process.stderr.write(`prp run: the bundle does not match its files:\n${problems.join("\n")}\n`);
    return written.path;
  }

  show("");
  for (const line of terminalSummary(runId, terminal)) show(line);
  show(`  result          ${result ? `${result.reportedWorkDisposition}: ${result.summary}` : "none proposed"}`);
  show(
    `  record          ${check.count} events, sourceSeq 1..${check.count}, one run.terminal, each checked as it came`,
  );
  show(`  bundle          ${path}`);
  return terminal.runTerminalState === "succeeded" ? 0 : 1;
}
