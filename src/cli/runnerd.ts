import { addStallOptions, stallLimits, type StallFlags } from "./stall-options.js";
import { resolve } from "node:path";
import { Command, Option } from "commander";
import { RUNNER_ID_PATTERN } from "../contract/ids.js";
import { buildContractDigest } from "../contract/fingerprint/committed-digest.js";
import { packageVersion } from "../contract/package-info.js";
import { MAX_PROTOCOL_VERSION, MIN_PROTOCOL_VERSION } from "../contract/versions.js";
import type { PermissionPolicy } from "../harness/acp/permissions.js";
import { DEFAULT_SHUTDOWN_GRACE_MS } from "../harness/supervisor.js";
import { readCaBundle } from "../transport/ca-bundle.js";
import { installFailsafe } from "../runner/failsafe.js";
import {
  ACP_READY_MS,
  startRunner,
  StartRunnerError,
  type RunnerHarness,
  type StartedRunner,
} from "../runner/start-runner.js";
import { STOP_SIGNALS, type StopSignal } from "../runner/stop-signals.js";
import {
  CREDENTIAL_FILE_HELP,
  CREDENTIAL_PROVIDER_HELP,
  parseCredentialFile,
  parseCredentialProvider,
} from "./credential-options.js";
import { AGENT_IDLE_HELP, collectAgentEnv, parseAgentCwd, permissionPolicyOption } from "./agent-options.js";
import { parseListen, parseNonNegativeInt, parsePositiveInt, parseProtocolVersion } from "./options.js";
import { startHealthServer } from "../ops/health-server.js";
import { runnerdHealth } from "../ops/runnerd-health.js";
import { addActivityCommands } from "./runnerd-activity.js";
import { handoff } from "../runner/runnerd-handoff.js";
import { readTicketStdin } from "../runner/ticket-stdin.js";
import {
  agentCwdRefusal,
  SANDBOX_UNAVAILABLE_EXIT,
  sandboxPolicy,
  type SandboxFlags,
} from "../harness/sandbox/sandbox-policy.js";
import { withSandboxOptions } from "./sandbox-options.js";
import { scriptFromOption } from "./script-option.js";
import { usageExitsTwo } from "./usage-exit.js";
import { namedAgent } from "./named-agent.js";
import { startTracing } from "../telemetry/tracing.js";

// Taken out of the environment by bin/prp-runnerd.js before this module was loaded.
const { bootstrapTicket, hooks } = handoff;
const log = (text: string) => process.stderr.write(`prp-runnerd: ${text}\n`);

interface RunnerdOptions extends SandboxFlags, StallFlags {
  local?: boolean;
  protocolMax?: number;
  connectUrl?: string;
  caBundlePath?: string;
  stateDir?: string;
  healthAddr?: { host: string; port: number };
  environmentLeaseId?: string;
  turnId?: string;
  itemId?: string;
  maxOutboxBytes?: number;
  p0ReserveBytes?: number;
  reconnectDelayMs: number;
  stopDeliveryMs: number;
  deadPeerTimeoutMs?: number;
  buildMetadata?: boolean;
  runId?: string;
  sessionId?: string;
  runnerId?: string;
  harness: "fake" | "acp";
  script?: string;
  agentCommand?: string;
  agent?: string;
  agentsDir?: string;
  agentCatalog?: string;
  agentModel?: string;
  agentCwd?: string;
  agentEnv?: Record<string, string>;
  permissionPolicy: PermissionPolicy;
  agentIdleMs?: number;
  fakeHarness?: string;
  delayMs?: number;
  logMaxLines: number;
  logMaxBytes: number;
  harnessMaxLineBytes: number;
  controllerMaxLineBytes: number;
  commandHistoryLimit: number;
  shutdownGraceMs: number;
  harnessReadyMs: number;
  credentialFile?: string;
  credentialProvider?: string;
  ticketStdin?: boolean;
}

const program = new Command("prp-runnerd")
  .description("the PRP runner daemon: owns one run's harness process group and reports what really happened")
  .version(packageVersion(), "-V, --version")
  .exitOverride(usageExitsTwo)
  .option("--local", "local (stdio) mode: PRP commands as JSONL on stdin, paperclip.runner.stream.v1 records on stdout")
  .option(
    "--connect-url <url>",
    "durable mode: dial the authority at this URL, ws:// (loopback only) or wss:// (TLS); the ticket comes from PAPERCLIP_RUNNER_BOOTSTRAP_TICKET, or from stdin with --ticket-stdin",
  )
  .option(
    "--ticket-stdin",
    "durable mode: read the one-use bootstrap ticket from stdin (one line, at most 4 KiB, up to EOF) instead of PAPERCLIP_RUNNER_BOOTSTRAP_TICKET; giving both is refused",
  )
  .option(
    "--ca-bundle-path <file>",
    "durable mode, wss:// only: PEM certificates to trust besides Node's root store (a file of at most 4 MiB that only its owner can write)",
  )
  .option(
    "--state-dir <dir>",
    "durable mode: the private directory of the runner's SQLite state (outbox, command journal)",
  )
  .option("--environment-lease-id <id>", "durable mode: the environment lease of the run identity")
  .option("--turn-id <id>", "durable mode: the turn of the run identity")
  .option("--item-id <id>", "durable mode: the item of the run identity")
  .option("--max-outbox-bytes <n>", "durable mode: the outbox limit (default 16 MiB)", parsePositiveInt)
  .option("--p0-reserve-bytes <n>", "durable mode: outbox bytes kept for P0 events (default 1 MiB)", parsePositiveInt)
  .option(
    "--health-addr <host:port>",
    "serve /healthz, /readyz (ready: the run under way, its state readable) and /metrics (outbox, reconnects, events emitted) on this plain-HTTP address; `health: URL` on stderr. Keep it loopback or private",
    parseListen,
  )
  .option("--reconnect-delay-ms <n>", "durable mode: wait before redialling after a drop", parseNonNegativeInt, 250)
  .option(
    "--stop-delivery-ms <n>",
    "durable mode: after a stop signal, how long to go on redialling to deliver the cancelled terminal before exiting 3 with the state kept",
    parsePositiveInt,
    30_000,
  )
  .option(
    "--dead-peer-timeout-ms <n>",
    "durable mode: close and redial when the authority was silent this long (default: 3 missed beats, 3 × the heartbeat interval the welcome carries)",
    parsePositiveInt,
  )
  .option(
    "--protocol-max <n>",
    "the highest PRP version this runner speaks, 1-3 (default 3): durable mode offers 1-N in its hello; local mode, which has no handshake, speaks N. Below 2 there are no session goals",
    parseProtocolVersion,
  )
  .option(
    "--build-metadata",
    "print this binary's protocol versions, transport modes and contract digest as JSON, then exit",
  )
  .option("--run-id <id>", "the run this runner serves")
  .option("--session-id <id>", "the normalized session id")
  .option("--runner-id <id>", "this runner instance: the source of its events")
  .addOption(
    new Option(
      "--harness <driver>",
      "the harness driver: fake (a scripted fake harness) or acp (an Agent Client Protocol agent)",
    )
      .choices(["fake", "acp"])
      .default("fake"),
  )
  .option(
    "--agent-command <cmd>",
    '--harness acp: the agent\'s command line, run by /bin/sh (e.g. "npx -y @zed-industries/claude-code-acp")',
  )
  .option(
    "--agent <name>",
    "an agent of the catalog (`prp agents list`), installed by `prp agents install NAME`; implies --harness acp (not with --agent-command)",
  )
  .option(
    "--agents-dir <dir>",
    "with --agent: the folder agents are installed in (default: PRP_AGENTS_DIR, or the cache folder)",
  )
  .option(
    "--agent-catalog <file>",
    "with --agent: a catalog of your own, over the built-in one (default: PRP_AGENT_CATALOG)",
  )
  .option(
    "--agent-model <id>",
    "--harness acp: the model the agent must use; a session that offers others ends the run (model_unavailable)",
  )
  .option(
    "--agent-cwd <dir>",
    "--harness acp: the agent's working directory and session cwd (default: this directory)",
    parseAgentCwd,
  )
  .option(
    "--agent-env <K=V>",
    "--harness acp: a variable for the agent, on top of PATH and HOME (repeatable)",
    collectAgentEnv,
  )
  .option("--agent-idle-ms <n>", `--harness acp: ${AGENT_IDLE_HELP}`, parsePositiveInt)
  .addOption(
    permissionPolicyOption(
      "deny",
      "--harness acp: who answers the agent's permission requests and questions: ask (the controller, by request.resolve), deny (refuse each one), allow-reads (allow read and search, refuse the rest), forbid (the agent must never ask: a request or question fails the run closed); questions are cancelled under every policy but ask",
    ),
  )
  .option("--script <name|file>", "--harness fake: the script to play (a file, or a scenario name)")
  .option(
    "--fake-harness <path>",
    "--harness fake: another executable speaking the fake-harness protocol, given --script FILE (default: this package's fake harness)",
  )
  .option("--delay-ms <n>", "passed to the harness: every delay step takes this long", parseNonNegativeInt)
  .option("--log-max-lines <n>", "lines kept in the harness log tail", parsePositiveInt, 32)
  .option("--log-max-bytes <n>", "bytes kept in the harness log tail", parsePositiveInt, 16_384)
  .option(
    "--harness-max-line-bytes <n>",
    "longest harness stdout line; a longer one is a protocol violation",
    parsePositiveInt,
    65_536,
  )
  .option(
    "--controller-max-line-bytes <n>",
    "longest command line on stdin; a longer one is refused",
    parsePositiveInt,
    65_536,
  )
  .option("--command-history-limit <n>", "command fingerprints kept for duplicate detection", parsePositiveInt, 4096)
  .option(
    "--shutdown-grace-ms <n>",
    "time between SIGTERM and SIGKILL to the harness group",
    parseNonNegativeInt,
    DEFAULT_SHUTDOWN_GRACE_MS,
  )
  .option(
    "--harness-ready-ms <n>",
    "how long the harness has to say ready (the protocol's 2 s by default; a loaded test machine may need longer)",
    parsePositiveInt,
    2_000,
  )
  .option("--credential-file <path>", CREDENTIAL_FILE_HELP, parseCredentialFile)
  .option("--credential-provider <id>", CREDENTIAL_PROVIDER_HELP, parseCredentialProvider)
  .addHelpText(
    "after",
    `
Local mode reads PRP commands (v1 up to --protocol-max, default 3) on stdin, one JSON per line, and writes one
paperclip.runner.stream.v1 record per line on stdout: each PRP event, and a receipt
(accepted, duplicate or rejected) for each command. Diagnostics go to stderr. The run
ends with exactly one run.terminal, then the runner exits 0. EOF on stdin, or a stdout
nobody reads any more (EPIPE), closes the run (controller_closed). SIGHUP, SIGINT, SIGQUIT
or SIGTERM cancels it: the harness group is ended, the terminal written (in durable mode
committed and delivered), and the runner exits 128 + the signal's number: 129, 130, 131,
143. A harness that already exited by itself keeps its own outcome. No harness process
outlives the runner, even one killed with SIGKILL: an orphan guard ends its process group.

Traces: the standard OTEL_* variables turn OpenTelemetry traces on (off by default; see
docs/deployment.md "Traces"); the run's prp.run span is a child of the W3C traceparent in
TRACEPARENT (a malformed one is ignored). The harness gets neither.

Durable mode (--connect-url) dials the authority with the one-use ticket from
PAPERCLIP_RUNNER_BOOTSTRAP_TICKET or, with --ticket-stdin, from stdin (one line, at most 4 KiB,
read until the writer closes it; empty, oversized, or given both ways: exit 2), commits every event to an SQLite outbox in --state-dir
before sending it, journals every command before its effect, and exits once its terminal is
acknowledged: 0 delivered or suspended, 3 when it needs a new ticket (lease expired, revoked,
bootstrap possibly consumed), 4 when its state is unrecoverable, 5 when the authority refuses
an event of its outbox for a reason resending cannot cure (refused_by_authority; the state is
kept, and redialling would only resend it), 6 when a wss:// authority's certificate does not
verify against Node's root store plus --ca-bundle-path (authority_untrusted; nothing was sent,
the ticket is unspent), 7 when the authority refuses the contract this runner was built for
(contract_mismatch; upgrade the runner image: prp-runnerd --build-metadata shows its
contractDigest; the ticket is unspent), 8 when --sandbox isolated cannot be set up on this
machine (sandbox_unavailable: the kernel refused the namespaces; nothing was started or sent, the
ticket is unspent). ws:// is accepted only when every DNS answer is loopback.

The harness runs in a sandbox (--sandbox isolated, the default on Linux): its own PID namespace
(nothing it starts outlives it, whatever it does with sessions and groups), its own user namespace
(it cannot trace, read the memory or environment of, or take descriptors from the runner or any
other process), and a filesystem view built from nothing: the system folders and this package
read-only, its workspace (--agent-cwd) and HOME writable, --sandbox-read and --sandbox-write paths
as asked, and never --state-dir nor a --sandbox-hide path. See docs/threat-model.md.

Nothing the harness reports is dropped. When the output cannot keep up (a full stdout pipe, or
the outbox over its soft limit) the runner stops reading the harness, which then blocks, and
goes on when there is room. An event that can never fit fails the run: a P0 runner.diagnostic
event_refused and a failed terminal with stopReason.code event_refused. So does an event the
contract accepts but canonical JSON cannot hold (a lone surrogate, more than 10,000 values):
the authority could never store it. An error inside the runner that nothing handled fails the
run the same way, with runner_internal_error; if even that fails, the runner exits 70 (local)
or 4 (durable) with the error on stderr.

Credential observer: with --credential-file, a run whose run.prepare carries
observeCredentials: true watches the file's directory (and polls it each second) and reports
each change of the credential (a refreshed token, another account) as auth.credentials.updated
with the next revision of the binding harness-auth. The first valid file is the baseline;
partial writes, deletion and rewrites of the same content report nothing. The event names the
provider, the binding and the revision only. The fake harness gets the file as
PRP_FAKE_CREDENTIAL_FILE (see the credentials-refresh scenario).

Harness drivers: --harness fake (default) plays --script NAME|FILE; --harness acp runs
--agent-command, or --agent NAME from the catalog, an agent speaking the Agent Client Protocol on
its stdio (see docs/agents.md). An agent that cannot start the run (not installed, exited before
initialize, not logged in, another ACP version, --agent-model not offered) ends it at once:
failed, stopReason {kind: agent_start, code, message}.

Runtime activity: the harness gets PAPERCLIP_RUNTIME_NOTIFICATION_HELPER (this command's
absolute path), PAPERCLIP_RUNTIME_NOTIFICATION_CONTEXT (a private descriptor file naming a
private Unix socket the runner serves, both in a 0700 folder of their own under the system's
temporary folder, never --state-dir) and PAPERCLIP_RUNTIME_NOTIFICATION_SECRET (drawn anew at
each start of the harness: the runner serves only the harness it is running now); --agent-env
cannot override any of them. A tool runs "$PAPERCLIP_RUNTIME_NOTIFICATION_HELPER" notification-context
before an operation and record-activity CONTEXT NAMESPACE ACTIVITY_KEY after it succeeded; the
runner then emits one runtime.activity.recorded (see prp-runnerd record-activity --help).

Examples:
  prp-runnerd --local --run-id run_1 --session-id session_1 --runner-id runner_1 --script happy-path
  prp-runnerd --local --run-id run_1 --session-id session_1 --runner-id runner_1 --harness fake --script ./my-script.json`,
  );

withSandboxOptions(program);
addStallOptions(program);
addActivityCommands(program);
// The daemon itself runs below; a subcommand's action exits the process when it is done.
program.action(() => {});
await program.parseAsync(process.argv);
const opts = program.opts<RunnerdOptions>();

if (opts.buildMetadata) {
  console.log(
    JSON.stringify({
      binaryContractVersion: 2,
      prp: { min: MIN_PROTOCOL_VERSION, max: MAX_PROTOCOL_VERSION },
      transportModes: ["stdio_local", "dial_ws_loopback", "dial_wss"],
      version: packageVersion(),
      contractDigest: buildContractDigest(),
    }),
  );
  process.exit(0);
}
const flag = (key: string) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
if (!opts.local === !opts.connectUrl)
  program.error("choose one mode: --local, or --connect-url for durable mode", { exitCode: 2 });
const durable = opts.connectUrl !== undefined;
const required = durable
  ? (["runId", "sessionId", "runnerId", "stateDir", "environmentLeaseId", "turnId", "itemId"] as const)
  : (["runId", "sessionId", "runnerId"] as const);
for (const key of required)
  if (!opts[key]) program.error(`${flag(key)} is required in ${durable ? "durable" : "--local"} mode`, { exitCode: 2 });
if (opts.caBundlePath !== undefined && !opts.connectUrl?.startsWith("wss://"))
  program.error("--ca-bundle-path is allowed only with a wss:// --connect-url", { exitCode: 2 });
const caBundle = opts.caBundlePath === undefined ? undefined : readCaBundle(opts.caBundlePath);
if (caBundle && !caBundle.ok)
  program.error(`prp-runnerd: ${caBundle.error.code}: ${caBundle.error.message}`, { exitCode: 2 });
if (opts.agent !== undefined && opts.agentCommand !== undefined)
  program.error("choose --agent NAME or --agent-command CMD, not both", { exitCode: 2 });
if (opts.agent !== undefined && program.getOptionValueSource("harness") !== "default" && opts.harness !== "acp")
  program.error("--agent runs an ACP agent: it goes with --harness acp", { exitCode: 2 });
if (opts.agent !== undefined) opts.harness = "acp";
for (const key of ["agentsDir", "agentCatalog"] as const)
  if (opts[key] !== undefined && opts.agent === undefined)
    program.error(`${flag(key)} goes with --agent`, { exitCode: 2 });
const named =
  opts.agent === undefined
    ? undefined
    : namedAgent(opts.agent, { dir: opts.agentsDir, catalogPath: opts.agentCatalog });
if (named && !named.ok) program.error(`prp-runnerd: ${named.error}`, { exitCode: 2 });
if (opts.harness === "fake" && !opts.script)
  program.error("--harness fake needs --script <name|file>", { exitCode: 2 });
if (opts.credentialProvider && !opts.credentialFile)
  program.error("--credential-provider goes with --credential-file", { exitCode: 2 });
if (opts.harness === "acp" && !opts.agentCommand && !named)
  program.error("--harness acp needs --agent NAME or --agent-command <cmd>", { exitCode: 2 });
if (opts.ticketStdin && !durable) program.error("--ticket-stdin goes with --connect-url", { exitCode: 2 });
// Two tickets would leave one unspent and say nothing about which the caller meant.
if (opts.ticketStdin && bootstrapTicket !== null)
  program.error(
    "ticket_ambiguous: choose --ticket-stdin or PAPERCLIP_RUNNER_BOOTSTRAP_TICKET, not both (unset the variable)",
    { exitCode: 2 },
  );
if (durable && !opts.ticketStdin && !bootstrapTicket)
  program.error(
    "durable mode needs a bootstrap ticket in PAPERCLIP_RUNNER_BOOTSTRAP_TICKET, or on stdin with --ticket-stdin",
    { exitCode: 2 },
  );
for (const key of [
  "runId",
  "sessionId",
  "runnerId",
  ...(durable ? (["environmentLeaseId", "turnId", "itemId"] as const) : []),
] as const) {
  if (!RUNNER_ID_PATTERN.test(opts[key]!))
    program.error(`${flag(key)} must match ${RUNNER_ID_PATTERN.source}`, { exitCode: 2 });
}
let ticket = bootstrapTicket;
if (opts.ticketStdin) {
  const read = await readTicketStdin(process.stdin);
  ticket = read.ok ? read.ticket : program.error(`prp-runnerd: ${read.message}`, { exitCode: 2 });
}
const sandboxed = sandboxPolicy(opts, durable ? [resolve(opts.stateDir!)] : [], log);
if (!sandboxed.ok) {
  log(`sandbox_unavailable: ${sandboxed.message}`);
  process.exit(SANDBOX_UNAVAILABLE_EXIT);
}
const sandbox = sandboxed.policy;
// The agent's workspace is shown writable: inside the runner's state or a hidden path it would show them.
const agentCwd = opts.agentCwd ?? process.cwd();
const shadowed = opts.harness === "acp" ? agentCwdRefusal(agentCwd, sandbox.hidden) : null;
if (shadowed) program.error(shadowed, { exitCode: 2 });
// An agent may be installed on first start (npx): unless told otherwise it gets longer to say ready.
if (opts.harness === "acp" && program.getOptionValueSource("harnessReadyMs") === "default")
  opts.harnessReadyMs = ACP_READY_MS;
const harness: RunnerHarness =
  opts.harness === "acp"
    ? {
        kind: "acp",
        command: named?.ok ? named.value.command : opts.agentCommand!,
        ...(named?.ok ? { profile: named.value.profile } : {}),
        ...(named?.ok && named.value.unstartable ? { unstartable: named.value.unstartable } : {}),
        ...(opts.agentModel !== undefined ? { model: opts.agentModel } : {}),
        cwd: agentCwd,
        ...(opts.agentEnv ? { env: opts.agentEnv } : {}),
        permissionPolicy: opts.permissionPolicy,
        ...(opts.agentIdleMs ? { idleMs: opts.agentIdleMs } : {}),
      }
    : {
        kind: "fake",
        script: scriptFromOption(program, opts.script!).path,
        ...(opts.delayMs !== undefined ? { delayMs: opts.delayMs } : {}),
        ...(opts.fakeHarness ? { executable: opts.fakeHarness } : {}),
      };
const common = {
  harness,
  sandbox,
  log,
  limits: {
    harnessMaxLineBytes: opts.harnessMaxLineBytes,
    logMaxLines: opts.logMaxLines,
    logMaxBytes: opts.logMaxBytes,
    shutdownGraceMs: opts.shutdownGraceMs,
    harnessReadyMs: opts.harnessReadyMs,
    controllerMaxLineBytes: opts.controllerMaxLineBytes,
    commandHistoryLimit: opts.commandHistoryLimit,
    ...stallLimits(opts),
  },
  ...(opts.protocolMax ? { protocolMax: opts.protocolMax } : {}),
  ...(opts.credentialFile
    ? {
        credentials: {
          file: opts.credentialFile,
          ...(opts.credentialProvider ? { provider: opts.credentialProvider } : {}),
        },
      }
    : {}),
  ...(hooks ? { hooks } : {}),
  // The span of whoever started this run (a worker, from the API request that created it).
  ...(process.env.TRACEPARENT ? { traceParent: process.env.TRACEPARENT } : {}),
};

process.stderr.on("error", () => {}); // a closed stderr loses diagnostics, never the run
const tracing = await startTracing("prp-runnerd", process.env, log);
let started: StartedRunner;
try {
  started = durable
    ? startRunner({
        ...common,
        mode: "durable",
        identity: {
          runnerInstanceId: opts.runnerId!,
          environmentLeaseId: opts.environmentLeaseId!,
          runId: opts.runId!,
          normalizedSessionId: opts.sessionId!,
          turnId: opts.turnId!,
          itemId: opts.itemId!,
        },
        connectUrl: opts.connectUrl!,
        stateDir: opts.stateDir!,
        ticket: ticket!,
        ...(caBundle?.ok ? { caBundle: caBundle.value } : {}),
        ...(opts.maxOutboxBytes ? { maxOutboxBytes: opts.maxOutboxBytes } : {}),
        ...(opts.p0ReserveBytes ? { p0ReserveBytes: opts.p0ReserveBytes } : {}),
        reconnectDelayMs: opts.reconnectDelayMs,
        stopDeliveryMs: opts.stopDeliveryMs,
        ...(opts.deadPeerTimeoutMs ? { deadPeerTimeoutMs: opts.deadPeerTimeoutMs } : {}),
      })
    : startRunner({
        ...common,
        mode: "local",
        runId: opts.runId!,
        sessionId: opts.sessionId!,
        runnerId: opts.runnerId!,
        input: process.stdin,
        output: process.stdout,
      });
} catch (err) {
  // A connect URL that can never be dialled: the durable runner's unrecoverable exit, as it always was.
  if (!(err instanceof StartRunnerError) || err.option !== "connectUrl") throw err;
  log(`unrecoverable: ${err.detail}`);
  process.exit(4);
}
const runner = started;
process.on("exit", () => runner.dispose());
let runEnded = false;
void runner.outcome.then(() => (runEnded = true));
// A health listener that cannot start is said, not fatal: the run matters more than its probe.
const healthServer = opts.healthAddr
  ? await startHealthServer(
      opts.healthAddr,
      runnerdHealth(durable ? resolve(opts.stateDir!) : undefined, () => runEnded),
      (m) => log(`warning: ${m}`),
    ).catch((err: unknown) => void log(`health_listen_failed: ${(err as Error).message}`))
  : undefined;
if (healthServer) log(`health: ${healthServer.url}`);

/** A stop signal cancels the run (see stop-signals.ts); the runner exits with its status once the terminal is out. */
let signalled: StopSignal | null = null;
for (const signal of STOP_SIGNALS) {
  process.on(signal, () => {
    if (signalled) return; // the cancel is under way
    signalled = signal;
    process.stderr.write(`prp-runnerd: ${signal}: cancelling the run\n`);
    runner.stop(signal);
  });
}
/** The last guard: an error nothing handled fails the run with a diagnostic; past that, exit 4 (durable) or 70 (local). */
installFailsafe(process, {
  failRun: (message) => runner.fail(message),
  exitCode: durable ? 4 : 70,
  exit: (code) => process.exit(code),
  log,
});

const outcome = await runner.outcome;
if (durable && outcome.code !== 0 && outcome.reason !== "cancelled")
  process.stderr.write(`prp-runnerd: ${outcome.reason}${outcome.detail !== undefined ? `: ${outcome.detail}` : ""}\n`);
await tracing.shutdown(); // the run's spans leave before the process does
process.exit(outcome.code);
