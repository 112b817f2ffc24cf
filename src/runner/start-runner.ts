import { existsSync, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { RUNNER_ID_PATTERN } from "../contract/ids.js";
import { packageVersion } from "../contract/package-info.js";
import { MAX_PROTOCOL_VERSION, MIN_PROTOCOL_VERSION } from "../contract/versions.js";
import type { AgentProfile } from "../agents/catalog.js";
import type { AgentStartCause } from "../agents/start-causes.js";
import { AcpDriver } from "../harness/acp/acp-driver.js";
import { PERMISSION_POLICIES, type PermissionPolicy } from "../harness/acp/permissions.js";
import { BatchedLineWriter } from "../harness/batched-writer.js";
import { FakeHarnessDriver } from "../harness/fake-driver.js";
import type { HarnessDriver } from "../harness/harness-driver.js";
import { BoundedLineReader } from "../harness/line-reader.js";
import {
  defaultSandboxMode,
  SANDBOX_UNAVAILABLE_EXIT,
  sandboxPolicy,
  type SandboxMode,
  type SandboxPolicy,
} from "../harness/sandbox/sandbox-policy.js";
import { probeSandbox } from "../harness/sandbox/sandbox-probe.js";
import { loadScript, resolveScriptPath } from "../harness/script-file.js";
import { DEFAULT_SHUTDOWN_GRACE_MS } from "../harness/supervisor.js";
import { parseConnectUrl } from "../transport/endpoint.js";
import { IDENTITY_FIELDS, type RunIdentity } from "../transport/envelope.js";
import { ActivityEndpoint, type ActivityRecorder } from "./activity/activity-endpoint.js";
import { HarnessActivity } from "./activity/harness-activity.js";
import { DurableRunner, type DurableOutcome } from "./durable/durable-runner.js";
import type { RunnerHooks } from "./runner-hooks.js";
import { LocalRunner } from "./local-runner.js";
import { runnerBuild } from "./runner-build.js";
import { contextFromTraceparent } from "../telemetry/trace-context.js";
import { signalExitStatus, type StopSignal } from "./stop-signals.js";
import { DEFAULT_STALL_GRACE_MS, DEFAULT_STALL_LIMIT_MS, MAX_STALL_MS } from "./run-machine/stall-watch.js";

/** An ACP agent gets longer than the fake harness to say ready: `npx` may install it first. */
export const ACP_READY_MS = 60_000;
/** How much later than an ACP driver's handshake deadline the run machine's ready timer fires. */
const ACP_READY_BACKSTOP_MS = 5_000;

/** The harness a runner plays. */
export type RunnerHarness =
  | {
      kind: "fake";
      /** The script: a scenario name (`happy-path`) or a file (absolute, or relative to the current directory). */
      script: string;
      /** Another executable speaking the fake-harness protocol (default: this package's fake harness). */
      executable?: string;
      /** Every delay step of the script takes this long. */
      delayMs?: number;
    }
  | {
      kind: "acp";
      /** The agent's command line, run by /bin/sh (e.g. `npx -y @zed-industries/claude-code-acp`). */
      command: string;
      /** The agent's working directory and session cwd, an existing directory (default: the current directory). */
      cwd?: string;
      /** Variables for the agent on top of PATH and HOME. */
      env?: Record<string, string>;
      /** Who answers the agent's permission requests (default `deny`). */
      permissionPolicy?: PermissionPolicy;
      /** How long the agent may send nothing during its turn (the driver's default when absent). */
      idleMs?: number;
      /** The catalog profile the agent was named by (`--agent NAME`): credential sources, login line, permission modes. */
      profile?: AgentProfile;
      /** The model the run asks for: one the session offers, selected before the prompt. */
      model?: string;
      /** Why the agent cannot be started (a profile not installed): the run ends at once, and `command` only names it. */
      unstartable?: { code: AgentStartCause; message: string };
    };

/** The limits prp-runnerd takes as flags; each absent one is prp-runnerd's default. */
export interface RunnerLimits {
  /** Longest harness stdout line (default 65,536 bytes). */
  harnessMaxLineBytes?: number;
  /** Lines and bytes kept in the harness log tail (defaults 32 and 16,384). */
  logMaxLines?: number;
  logMaxBytes?: number;
  /** Between SIGTERM and SIGKILL to the harness group. */
  shutdownGraceMs?: number;
  /** How long the harness has to say ready (default 2 s; an ACP agent 60 s). */
  harnessReadyMs?: number;
  /** Local mode: longest command line on the input (default 65,536 bytes). */
  controllerMaxLineBytes?: number;
  /** Local mode: command fingerprints kept for duplicate detection (default 4096). */
  commandHistoryLimit?: number;
  /** How long a turn may report no progress before it stalls (default 15 min; 0: never). */
  stallLimitMs?: number;
  /** After a stall's interrupt, how long until the run is cancelled (default 30 s). */
  stallGraceMs?: number;
}

/**
 * The harness's sandbox. Absent: the platform's default (`isolated` on Linux; `none` elsewhere,
 * said through `log`). `isolated` is refused rather than dropped when the kernel cannot make the
 * namespaces (the outcome is `sandbox_unavailable`, code 8, and nothing is started). `none` runs
 * the harness unisolated (see docs/threat-model.md). The state directory is always hidden.
 */
export interface RunnerSandbox {
  mode: SandboxMode;
  readable?: string[];
  writable?: string[];
  hidden?: string[];
}

interface CommonRunnerOptions {
  harness: RunnerHarness;
  limits?: RunnerLimits;
  /** The highest PRP version (1–3, default 3): offered in the hello (durable), spoken (local). */
  protocolMax?: number;
  /** The harness credential file to observe once run.prepare opts in; the provider defaults to the harness kind. */
  credentials?: { file: string; provider?: string };
  sandbox?: RunnerSandbox;
  /** Diagnostics for a person, one line each, never a secret (default: none). */
  log?: (text: string) => void;
  /** Test points inside the run (runner-hooks.ts: the fault framework's crashes); none in production. */
  hooks?: RunnerHooks;
  /** The W3C traceparent the run's `prp.run` span is a child of (a malformed one is ignored); spans go to the global tracer. */
  traceParent?: string;
}

/** Durable mode: dial the authority, commit every event to the outbox in `stateDir`, exit once the terminal is acknowledged. */
export interface DurableRunnerStartOptions extends CommonRunnerOptions {
  mode: "durable";
  /** The authority's URL for this run (AuthorityServer.connectUrl): ws:// (loopback only) or wss://. */
  connectUrl: string;
  /** The one-use bootstrap ticket (AuthorityServer.issueBootstrapTicket). */
  ticket: string;
  /** The runner's private state (outbox, command journal); a replacement runner reuses it. */
  stateDir: string;
  identity: RunIdentity;
  /** wss:// only: PEM certificates to trust besides Node's root store (the text, not a path). */
  caBundle?: string;
  maxOutboxBytes?: number;
  p0ReserveBytes?: number;
  /** Wait before redialling after a drop (default 250 ms). */
  reconnectDelayMs?: number;
  /** After stop(), how long to go on redialling to deliver the cancelled terminal (default 30 s). */
  stopDeliveryMs?: number;
  /** Close and redial when the authority was silent this long (default: 3 missed beats, 3 × the welcome's interval). */
  deadPeerTimeoutMs?: number;
}

/** Local mode: PRP commands as JSON lines on `input`, paperclip.runner.stream.v1 records as lines on `output`. */
export interface LocalRunnerStartOptions extends CommonRunnerOptions {
  mode: "local";
  runId: string;
  sessionId: string;
  runnerId: string;
  /** The controller's command lines; its end closes the run (controller_closed). */
  input: NodeJS.ReadableStream;
  /** Where the stream records go; an error on it (EPIPE) closes the run like the input's end. */
  output: NodeJS.WritableStream;
}

export type StartRunnerOptions = DurableRunnerStartOptions | LocalRunnerStartOptions;

/**
 * How a run ended: `code` is the status prp-runnerd exits with. Durable mode: the DurableOutcome
 * codes (0 delivered or suspended, 3 needs a new ticket, 4 unrecoverable, 5 refused by the
 * authority, 6 authority untrusted, 7 contract mismatch); 8 sandbox_unavailable (nothing
 * started). Local mode: 0, `run_ended`. After stop(signal) with the terminal out (and, durable,
 * delivered): 128 + the signal's number, `cancelled`.
 */
export interface RunnerOutcome {
  code: number;
  reason: DurableOutcome["reason"] | "run_ended" | "cancelled" | "sandbox_unavailable";
  detail?: string;
  /** The stop that cancelled the run, if one did. */
  stoppedBy: StopSignal | null;
}

/** A runner started by startRunner. */
export interface StartedRunner {
  /** Settles once the run is over and the runner's resources are released; never rejects for the run's own failures. */
  readonly outcome: Promise<RunnerOutcome>;
  /**
   * Cancels the run as a stop signal does prp-runnerd (default SIGTERM): the harness group is
   * ended and the one terminal written (durable: committed and delivered); the outcome's code is
   * then 128 + the signal's number. A second call does nothing.
   */
  stop(signal?: StopSignal): void;
  /** A caller's last guard (see installFailsafe): ends the run failed with runner_internal_error; may throw when the run is past saving. */
  fail(message: string): void;
  /** Removes the runner's private temporary folder now; synchronous, for a process `exit` handler. Done by itself when the run ends. */
  dispose(): void;
}

/** A bad option: `option` names it (e.g. `connectUrl`, `ticket`, `harness.script`). Nothing was started. */
export class StartRunnerError extends Error {
  constructor(
    readonly option: string,
    /** Why, without the option's name. */
    readonly detail: string,
  ) {
    super(`startRunner: ${option}: ${detail}`);
    this.name = "StartRunnerError";
  }
}

const positiveInt = (value: unknown) => Number.isSafeInteger(value) && (value as number) > 0;

function check(options: StartRunnerOptions): void {
  const fail = (option: string, why: string): never => {
    throw new StartRunnerError(option, why);
  };
  if (typeof options !== "object" || options === null) fail("options", "expected an object");
  if (options.mode !== "durable" && options.mode !== "local")
    fail("mode", `expected "durable" or "local", got ${JSON.stringify((options as { mode?: unknown }).mode)}`);
  const ids: Array<[string, unknown]> =
    options.mode === "durable"
      ? Object.entries(options.identity ?? fail("identity", "required in durable mode")).map(([k, v]) => [
          `identity.${k}`,
          v,
        ])
      : [
          ["runId", options.runId],
          ["sessionId", options.sessionId],
          ["runnerId", options.runnerId],
        ];
  if (options.mode === "durable") {
    for (const key of IDENTITY_FIELDS) {
      if (options.identity[key] === undefined) fail(`identity.${key}`, "required");
    }
  }
  for (const [name, value] of ids)
    if (typeof value !== "string" || !RUNNER_ID_PATTERN.test(value))
      fail(name, `must match ${RUNNER_ID_PATTERN.source}`);
  if (options.mode === "durable") {
    if (typeof options.connectUrl !== "string") fail("connectUrl", "required in durable mode");
    const url = parseConnectUrl(options.connectUrl);
    if (!url.ok) fail("connectUrl", url.error.message);
    if (typeof options.ticket !== "string" || options.ticket === "")
      fail("ticket", "durable mode needs the bootstrap ticket (AuthorityServer.issueBootstrapTicket)");
    if (typeof options.stateDir !== "string" || options.stateDir === "") fail("stateDir", "required in durable mode");
    if (options.caBundle !== undefined && !options.connectUrl.startsWith("wss://"))
      fail("caBundle", "allowed only with a wss:// connectUrl");
    for (const key of ["maxOutboxBytes", "p0ReserveBytes", "stopDeliveryMs", "deadPeerTimeoutMs"] as const) {
      if (options[key] !== undefined && !positiveInt(options[key])) fail(key, "expected a positive integer");
    }
    if (
      options.reconnectDelayMs !== undefined &&
      !(Number.isSafeInteger(options.reconnectDelayMs) && options.reconnectDelayMs >= 0)
    )
      fail("reconnectDelayMs", "expected a non-negative integer");
  } else {
    if (!options.input || typeof options.input.on !== "function") fail("input", "local mode needs a readable stream");
    if (!options.output || typeof options.output.write !== "function")
      fail("output", "local mode needs a writable stream");
  }
  const h = options.harness;
  if (!h || (h.kind !== "fake" && h.kind !== "acp")) fail("harness.kind", `expected "fake" or "acp"`);
  if (h.kind === "fake" && (typeof h.script !== "string" || h.script === ""))
    fail("harness.script", "the fake harness needs a script (a scenario name or a file)");
  if (h.kind === "acp") {
    if (typeof h.command !== "string" || h.command === "")
      fail("harness.command", "the ACP harness needs the agent's command line");
    if (h.cwd !== undefined && !(existsSync(h.cwd) && statSync(h.cwd).isDirectory()))
      fail("harness.cwd", `"${h.cwd}" is not a directory`);
    if (h.permissionPolicy !== undefined && !PERMISSION_POLICIES.includes(h.permissionPolicy))
      fail("harness.permissionPolicy", `expected one of ${PERMISSION_POLICIES.join(", ")}`);
  }
  if (
    options.protocolMax !== undefined &&
    !(
      Number.isInteger(options.protocolMax) &&
      options.protocolMax >= MIN_PROTOCOL_VERSION &&
      options.protocolMax <= MAX_PROTOCOL_VERSION
    )
  ) {
    fail("protocolMax", `expected ${MIN_PROTOCOL_VERSION}-${MAX_PROTOCOL_VERSION}`);
  }
  for (const [key, value] of Object.entries(options.limits ?? {})) {
    if (value === undefined) continue;
    // 0 means: no grace (shutdown, stall), no stall watch (stallLimitMs).
    const zeroOk = key === "shutdownGraceMs" || key === "stallLimitMs" || key === "stallGraceMs";
    if (!(Number.isSafeInteger(value) && (value > 0 || (zeroOk && value === 0))))
      fail(`limits.${key}`, `expected a ${zeroOk ? "non-negative" : "positive"} integer`);
    if ((key === "stallLimitMs" || key === "stallGraceMs") && value > MAX_STALL_MS)
      fail(`limits.${key}`, `expected at most ${MAX_STALL_MS} ms (7 days)`);
  }
}

/** The harness's sandbox, or why it cannot be had (see RunnerSandbox). */
function harnessSandbox(
  options: StartRunnerOptions,
  log: (text: string) => void,
): { ok: true; policy: SandboxPolicy } | { ok: false; message: string } {
  const hidden = options.mode === "durable" ? [resolve(options.stateDir)] : [];
  const asked = options.sandbox;
  // Nothing asked: the platform's default, said as prp-runnerd says it.
  if (!asked)
    return sandboxPolicy(
      { sandbox: defaultSandboxMode(), sandboxRead: [], sandboxWrite: [], sandboxHide: [] },
      hidden,
      log,
    );
  if (asked.mode === "isolated") {
    const probe = probeSandbox();
    if (!probe.ok)
      return {
        ok: false,
        message: `sandbox isolated: the harness sandbox cannot be set up here: ${probe.reason}. Sandbox mode none runs the harness without it (read what that gives up in docs/threat-model.md)`,
      };
  }
  const hide = [...(asked.hidden ?? []), ...hidden.filter((path) => !(asked.hidden ?? []).includes(path))];
  return {
    ok: true,
    policy: { mode: asked.mode, readable: asked.readable ?? [], writable: asked.writable ?? [], hidden: hide },
  };
}

/**
 * Runs one run's runner in this process: the library form of `prp-runnerd`. It starts the
 * harness, plays the run and settles `outcome` with the status prp-runnerd would exit with;
 * it never exits the process, installs no signal handler and writes nothing to stdout or
 * stderr (diagnostics go to `log`; local mode's records to `output`).
 *
 * startRunner or spawnRunner? spawnRunner starts `prp-runnerd` as a child process: the runner
 * has a process of its own, its own signal handling and exit status, and a caller that crashes
 * or is killed takes nothing down with it but the runner (whose orphan guard ends the harness).
 * Use it for production runs and anything long-lived. startRunner shares the caller's process:
 * no spawn cost and a typed outcome, for tests, embedded tools and single-purpose processes, but
 * the harness's process group, the signals that should stop the run (call `stop`), the
 * process's last-resort error handling (`fail`, see installFailsafe) and its lifetime are then
 * the caller's concern; an error thrown elsewhere in the process can end the run with it.
 *
 * Throws StartRunnerError, naming the option, for options that can never run (nothing is
 * started then). The bootstrap ticket is an option: nothing here reads the environment.
 */
export function startRunner(options: StartRunnerOptions): StartedRunner {
  check(options);
  const log = options.log ?? (() => {});
  const durable = options.mode === "durable";
  const limits = options.limits ?? {};
  const h = options.harness;
  const stateDir = durable ? resolve(options.stateDir) : undefined;
  const agentCwd =
    h.kind === "acp" ? (h.cwd === undefined ? process.cwd() : isAbsolute(h.cwd) ? h.cwd : resolve(h.cwd)) : undefined;
  let scriptPath: string | undefined;
  if (h.kind === "fake") {
    try {
      scriptPath = resolve(resolveScriptPath(h.script));
    } catch (err) {
      throw new StartRunnerError("harness.script", (err as Error).message);
    }
    const loaded = loadScript(scriptPath);
    if (!loaded.ok)
      throw new StartRunnerError(
        "harness.script",
        `script refused: ${loaded.error.code} at ${loaded.error.path || "/"}: ${loaded.error.message}`,
      );
  }

  let stoppedBy: StopSignal | null = null;
  const sandboxed = harnessSandbox(options, log);
  if (!sandboxed.ok) {
    return {
      outcome: Promise.resolve({
        code: SANDBOX_UNAVAILABLE_EXIT,
        reason: "sandbox_unavailable",
        detail: sandboxed.message,
        stoppedBy,
      }),
      stop: () => {},
      fail: () => {},
      dispose: () => {},
    };
  }
  const sandbox = sandboxed.policy;
  // The agent's workspace is shown writable: inside the runner's state or a hidden path it would show them.
  const shadowed =
    agentCwd === undefined
      ? undefined
      : sandbox.hidden.find((path) => agentCwd === path || agentCwd.startsWith(`${path}/`));
  if (shadowed)
    throw new StartRunnerError(
      "harness.cwd",
      `${agentCwd} lies inside ${shadowed}, which the agent must never see (the runner's state or a hidden path): give the agent a workspace of its own`,
    );

  // Runtime activity (runtime.md §13.2): the socket and descriptor in a private folder of their own,
  // never the state directory; a new secret for each harness start (HarnessActivity).
  const activity = HarnessActivity.create();
  const runtimeEnv = activity.env;
  const harnessReadyMs = limits.harnessReadyMs ?? (h.kind === "acp" ? ACP_READY_MS : 2_000);
  // An ACP agent's own deadline (the driver's, on initialize and on session/new) names what it left
  // unanswered; the run machine's ready timer is the backstop behind it, late enough not to race it.
  const readyTimeoutMs = h.kind === "acp" ? harnessReadyMs + ACP_READY_BACKSTOP_MS : harnessReadyMs;
  const driverLimits = {
    maxLineBytes: limits.harnessMaxLineBytes ?? 65_536,
    logMaxLines: limits.logMaxLines ?? 32,
    logMaxBytes: limits.logMaxBytes ?? 16_384,
    graceMs: limits.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS,
  };
  const stall = {
    limitMs: limits.stallLimitMs ?? DEFAULT_STALL_LIMIT_MS,
    graceMs: limits.stallGraceMs ?? DEFAULT_STALL_GRACE_MS,
  };
  const runId = durable ? options.identity.runId : options.runId;
  const sessionId = durable ? options.identity.normalizedSessionId : options.sessionId;
  let driver: HarnessDriver;
  try {
    driver = activity.bind(
      h.kind === "acp"
        ? new AcpDriver({
            command: h.command,
            cwd: agentCwd!,
            ...(h.env ? { env: h.env } : {}),
            runtimeEnv,
            permissionPolicy: h.permissionPolicy ?? "deny",
            runId,
            sessionId,
            clientVersion: packageVersion(),
            ...driverLimits,
            sandbox,
            // session/new and session/load get as long as initialize: the harness's time to say ready.
            handshakeMs: harnessReadyMs,
            ...(h.idleMs ? { idleMs: h.idleMs } : {}),
            ...(h.profile ? { profile: h.profile } : {}),
            ...(h.model !== undefined ? { model: h.model } : {}),
            ...(h.unstartable ? { unstartable: h.unstartable } : {}),
            ...(durable ? { identity: { turnId: options.identity.turnId, itemId: options.identity.itemId } } : {}),
          })
        : new FakeHarnessDriver({
            scriptPath: scriptPath!,
            runtimeEnv,
            ...(h.delayMs !== undefined ? { delayMs: h.delayMs } : {}),
            ...(h.executable ? { executable: h.executable } : {}),
            ...(options.credentials ? { credentialFile: options.credentials.file } : {}),
            // Durable: kept with the run's state, for a replacement runner's harness (see GoalJournal).
            journalPath: join(stateDir ?? activity.dir, "fake-harness-journal.jsonl"),
            ...driverLimits,
            sandbox,
          }),
    );
  } catch (err) {
    activity.remove();
    throw err;
  }
  const credentials = options.credentials
    ? { credentials: { provider: options.credentials.provider ?? h.kind, path: options.credentials.file } }
    : {};
  const trace = {
    runnerId: durable ? options.identity.runnerInstanceId : options.runnerId,
    parent: contextFromTraceparent(options.traceParent),
  };
  const hooks = options.hooks;
  const recorder = (record: ActivityRecorder) => hooks?.activity?.(record) ?? record;
  let disposed = false;
  const dispose = () => {
    if (disposed) return;
    disposed = true;
    activity.remove();
  };

  if (options.mode === "durable") {
    const build = runnerBuild();
    let runner: DurableRunner;
    try {
      runner = new DurableRunner({
        driver,
        readyTimeoutMs,
        stall,
        ...credentials,
        trace,
        identity: { ...options.identity },
        connectUrl: options.connectUrl,
        stateDir: options.stateDir,
        bootstrapToken: options.ticket,
        ...(options.caBundle !== undefined ? { caBundle: options.caBundle } : {}),
        runnerVersion: build.version,
        runnerDigest: build.digest,
        contractDigest: build.contractDigest,
        ...(options.protocolMax ? { protocolMax: options.protocolMax } : {}),
        ...(options.maxOutboxBytes ? { maxOutboxBytes: options.maxOutboxBytes } : {}),
        ...(options.p0ReserveBytes ? { p0ReserveBytes: options.p0ReserveBytes } : {}),
        reconnectDelayMs: options.reconnectDelayMs ?? 250,
        stopDeliveryMs: options.stopDeliveryMs ?? 30_000,
        ...(options.deadPeerTimeoutMs ? { heartbeat: { deadPeerTimeoutMs: options.deadPeerTimeoutMs } } : {}),
        ...(hooks ? { hooks } : {}),
        log,
      });
    } catch (err) {
      dispose();
      throw err;
    }
    const outcome = (async (): Promise<RunnerOutcome> => {
      try {
        const endpoint = await ActivityEndpoint.open(
          activity,
          recorder((payload) => runner.recordActivity(payload)),
        );
        const ended = await runner.run();
        endpoint.close();
        // A stop's status says the cancelled terminal was delivered; 3 or 4 still say it was not.
        if (stoppedBy && ended.code === 0) return { code: signalExitStatus(stoppedBy), reason: "cancelled", stoppedBy };
        return { ...ended, stoppedBy };
      } finally {
        dispose();
      }
    })();
    return {
      outcome,
      stop: (signal = "SIGTERM") => {
        if (stoppedBy) return; // the cancel is under way
        stoppedBy = signal;
        runner.cancel();
      },
      fail: (message) => runner.failInternal(message),
      dispose,
    };
  }

  const { input, output } = options;
  // The controller stopped reading the output (EPIPE): it is gone, the same as the input's end.
  const writer = new BatchedLineWriter(output, undefined, (error) => {
    log(
      `stdout closed (${(error as NodeJS.ErrnoException).code ?? error.message}): the controller is gone; closing the run`,
    );
    runner.controllerClosed();
  });
  const runner = new LocalRunner(
    {
      driver,
      readyTimeoutMs,
      stall,
      ...credentials,
      trace,
      runId,
      sessionId,
      runnerId: options.runnerId,
      commandHistoryLimit: limits.commandHistoryLimit ?? 4096,
      ...(options.protocolMax ? { protocolVersion: options.protocolMax } : {}),
    },
    {
      write: (line) => writer.write(line),
      onDrain: (resume) => writer.onDrain(resume),
      flush: (done) => writer.flush(done),
    },
  );
  const reader = new BoundedLineReader(limits.controllerMaxLineBytes ?? 65_536);
  const feed = (events: ReturnType<BoundedLineReader["push"]>) => {
    for (const e of events)
      if (e.kind === "line") runner.acceptLine(e.text);
      else if (e.kind === "oversize") runner.acceptOversizeLine(e.bytes);
  };
  const onData = (chunk: Buffer | string) => feed(reader.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk));
  const onEnd = () => {
    feed(reader.end());
    runner.controllerClosed();
  };
  const outcome = (async (): Promise<RunnerOutcome> => {
    try {
      const endpoint = await ActivityEndpoint.open(
        activity,
        recorder((payload) => runner.recordActivity(payload)),
      );
      input.on("data", onData);
      input.on("end", onEnd);
      await runner.done;
      endpoint.close();
      input.pause();
      input.removeListener("data", onData);
      input.removeListener("end", onEnd);
      await new Promise<void>((done) => writer.flush(done));
      return stoppedBy
        ? { code: signalExitStatus(stoppedBy), reason: "cancelled", stoppedBy }
        : { code: 0, reason: "run_ended", stoppedBy };
    } finally {
      dispose();
    }
  })();
  return {
    outcome,
    stop: (signal = "SIGTERM") => {
      if (stoppedBy) return;
      stoppedBy = signal;
      runner.cancel();
    },
    fail: (message) => runner.failInternal(message),
    dispose,
  };
}
