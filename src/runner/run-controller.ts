import { decodeValue } from "../contract/decode.js";
import { ContractViolation } from "../contract/errors.js";
import type * as T from "../contract/generated/types.js";
import type { PrpCommand } from "../contract/kinds.js";
import { responseMismatch } from "../contract/question-rules.js";
import { COMMAND_SCHEMA, parseHarnessMessage, type HarnessCommandPayloads, type HarnessCommandType, type HarnessMessage } from "../harness/harness-protocol.js";
import { DEFAULT_SHUTDOWN_GRACE_MS, SupervisedProcess, type ExitFact } from "../harness/supervisor.js";
import type { EventSink } from "./event-sink.js";
import { reconcileTerminal, type Intent } from "./reconcile.js";

export interface RunControllerOptions {
  runId: string;
  sessionId: string;
  /** The harness to start on run.prepare. */
  harness: { command: string; args: string[] };
  harnessMaxLineBytes?: number;
  logMaxLines?: number;
  logMaxBytes?: number;
  shutdownGraceMs?: number;
  /** How long the harness has to say ready (runtime.md §4.1: 2 s). */
  readyTimeoutMs?: number;
  /** How often a harness killed by a signal the runner did not send is started again (default 1). */
  harnessRestartLimit?: number;
}

/** What the runner keeps of a request it has seen created (the request schema dispatches on schema). */
interface PendingRequest {
  schema: string;
  requestId: string;
  input?: T.PRPQuestionSet;
}

/** The PRP command types a run controller acts on. */
export const SUPPORTED_COMMANDS: ReadonlySet<string> = new Set(["run.prepare", "session.open", "turn.start", "turn.interrupt", "turn.stop", "request.resolve", "run.cancel"]);
/** Event families only the runner may report; a harness that sends one is not believed. */
const RUNNER_OWNED = /^(run|harness|runner)\./;

/**
 * What a runner does with one run, whatever carries its commands and events (runtime.md §4):
 * drives one harness process group, turns harness messages into PRP events, and ends every run
 * with exactly one run.terminal that it decides itself. The transport in front of it admits
 * commands (sequence, duplicates) and asks `refusal` before `apply`, one command at a time.
 */
export class RunController {
  private harness: SupervisedProcess | null = null;
  private harnessTrusted = true;
  private harnessPaused = false;
  /** Set once the runner itself ends the harness: its exit is then expected, not a crash. */
  private terminating = false;
  private harnessRestarts = 0;
  private suspended = false;
  private lastHarnessMessageSeq = 0;
  private intent: Intent | null = null;
  private prepared = false;
  private sessionOpened = false;
  private turnId: string | null = null;
  private turnEnded = false;
  private readonly pendingRequests = new Map<string, PendingRequest>();
  private result: T.PRPStructuredRunResult | null = null;
  private proposal: Record<string, unknown> | null = null;
  private readyWaiter: (() => void) | null = null;
  private sessionStartedWaiter: (() => void) | null = null;
  private harnessReady = false;
  private commandSeq = 0;
  private terminal: T.PRPRunTerminal | null = null;
  private finishing: Promise<void> | null = null;
  private resolveDone!: (terminal: T.PRPRunTerminal) => void;
  /** Resolves with the run's terminal once it has been written. */
  readonly done = new Promise<T.PRPRunTerminal>((resolve) => (this.resolveDone = resolve));

  constructor(
    private readonly options: RunControllerOptions,
    private readonly sink: EventSink,
  ) {}

  /** Why an admitted command cannot take effect now, or null. Its sequence number stays used. */
  refusal(command: PrpCommand): { code: string; reason: string } | null {
    const no = (code: string, reason: string) => ({ code, reason });
    if (this.terminal || this.finishing) return no("run_terminal", "the run has ended");
    switch (command.type) {
      case "run.prepare":
        return this.prepared ? no("already_prepared", "the run is already prepared") : null;
      case "session.open":
        if (!this.prepared) return no("not_prepared", "session.open needs run.prepare first");
        return this.sessionOpened ? no("session_already_open", "the session is already open") : null;
      case "turn.start":
        if (!this.sessionOpened) return no("session_not_open", "turn.start needs session.open first");
        return this.turnId ? no("turn_already_started", `turn ${this.turnId} is already started; a run has one turn`) : null;
      case "turn.interrupt":
      case "turn.stop":
        return this.turnId && !this.turnEnded ? null : no("no_active_turn", "there is no active turn to interrupt");
      case "request.resolve":
        return this.resolutionRefusal(command.payload as Record<string, unknown>);
      default:
        return null;
    }
  }

  private resolutionRefusal(payload: Record<string, unknown>): { code: string; reason: string } | null {
    const request = this.pendingRequests.get(String(payload.requestId));
    if (!request) return { code: "unknown_request", reason: `no pending request ${JSON.stringify(payload.requestId)}` };
    const resolution = payload.resolution as Record<string, unknown> | undefined;
    if (!resolution || typeof resolution.action !== "string") return { code: "invalid_resolution", reason: "resolution.action is required" };
    if (request.input && resolution.action === "submit") {
      const response = decodeValue(resolution.response, { kind: "question-response" });
      if (!response.ok) return { code: response.error.code, reason: `resolution.response${response.error.path}: ${response.error.message}` };
      const mismatch = responseMismatch(request.input, response.value, "/resolution/response");
      if (mismatch) return { code: mismatch.code, reason: `${mismatch.path}: ${mismatch.message}` };
    }
    return null;
  }

  /** Carries out a command `refusal` accepted. */
  async apply(command: PrpCommand): Promise<void> {
    const payload = command.payload as Record<string, unknown>;
    switch (command.type) {
      case "run.prepare":
        return this.prepare();
      case "session.open":
        this.sessionOpened = true;
        this.emit("session.starting", {});
        this.tell("session.open", { normalizedSessionId: this.options.sessionId, driverSessionId: `driver_${this.options.sessionId}` });
        return this.sessionStarted();
      case "turn.start": {
        const turnId = typeof payload.turnId === "string" && payload.turnId ? payload.turnId : `turn_${this.options.runId}_1`;
        this.turnId = turnId;
        this.emit("turn.submitted", {}, { turnId });
        return this.tell("turn.start", { turnId, ...(typeof payload.text === "string" ? { text: payload.text } : {}) });
      }
      case "turn.interrupt":
      case "turn.stop":
        this.setIntent("interrupted");
        return this.tell("turn.interrupt", { reason: typeof payload.reason === "string" ? payload.reason : "operator" });
      case "request.resolve":
        return this.tell("request.resolve", { requestId: String(payload.requestId), resolution: payload.resolution as Record<string, unknown> });
      case "run.cancel":
        return this.stop("cancelled");
    }
  }

  private async prepare(): Promise<void> {
    this.prepared = true;
    this.emit("runtime.phase.changed", { phase: "workspace_preparing" });
    this.emit("workspace.ready", {});
    this.emit("harness.starting", { command: this.options.harness.command });
    await this.startHarness();
  }

  /** Starts the harness in its own group and waits for its ready; reports harness.ready or a violation. */
  private async startHarness(): Promise<boolean> {
    const o = this.options;
    this.harnessReady = false;
    const h = new SupervisedProcess({
      command: o.harness.command,
      args: o.harness.args,
      ...(o.harnessMaxLineBytes ? { maxLineBytes: o.harnessMaxLineBytes } : {}),
      ...(o.logMaxLines ? { logMaxLines: o.logMaxLines } : {}),
      ...(o.logMaxBytes ? { logMaxBytes: o.logMaxBytes } : {}),
      ...(o.shutdownGraceMs !== undefined ? { graceMs: o.shutdownGraceMs } : {}),
      onLine: (text) => this.onHarnessLine(text),
      onOversize: (bytes) => this.violation(`harness wrote a stdout line of ${bytes} bytes, over the ${o.harnessMaxLineBytes ?? 65_536}-byte limit`),
    });
    this.harness = h;
    void h.exited.then((exit) => this.onHarnessExit(h, exit));
    const ready = await new Promise<boolean>((resolve) => {
      if (this.harnessReady) return resolve(true);
      const timer = setTimeout(() => resolve(false), o.readyTimeoutMs ?? 2_000);
      this.readyWaiter = () => { clearTimeout(timer); resolve(true); };
      void h.exited.then(() => { clearTimeout(timer); resolve(this.harnessReady); });
    });
    if (ready) this.emit("harness.ready", { pid: h.pid, ...(this.harnessRestarts > 0 ? { restart: this.harnessRestarts } : {}) });
    else if (!this.intent) this.violation(`harness did not say ready within ${o.readyTimeoutMs ?? 2_000} ms`);
    return ready;
  }

  /**
   * A harness killed by a signal the runner did not send (runtime.md §5.10 harness-restart) is
   * started once more and resumes where it was: the runner reports the exit, the new harness's
   * ready and session.reconciled, and the new process replays its script silently up to the last
   * message the runner had. Any other exit ends the run.
   */
  private async onHarnessExit(h: SupervisedProcess, exit: ExitFact): Promise<void> {
    if (h !== this.harness || this.suspended) return;
    const crashed = !this.terminating && exit.signal !== null && this.sessionOpened && !this.terminal && !this.finishing;
    if (!crashed || this.harnessRestarts >= (this.options.harnessRestartLimit ?? 1)) return void this.finish();
    this.harnessRestarts++;
    await Promise.race([h.stdoutEnded, delay(this.options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS)]);
    const resumeAfterMessageSeq = this.lastHarnessMessageSeq;
    await h.terminate(); // reap the rest of the old group
    this.emit("harness.exited", { ...exit, semanticResultObserved: this.result !== null, log: h.log.snapshot(), restarting: true });
    if (!(await this.startHarness())) return;
    this.tell("session.open", { normalizedSessionId: this.options.sessionId, driverSessionId: `driver_${this.options.sessionId}`, resumeAfterMessageSeq });
    this.emit("session.reconciled", { resumedAfterMessageSeq: resumeAfterMessageSeq, restart: this.harnessRestarts });
    if (this.turnId) this.tell("turn.start", { turnId: this.turnId });
  }

  /**
   * Holds the next command until the harness has answered session.open — session.started, then
   * the phase `executing` (runtime.md §4.3) — or exits, or the command wait passes. Without the
   * hold, turn.submitted could land between the two depending on how the pipe chunks them.
   */
  private sessionStarted(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, 10_000);
      const done = () => { clearTimeout(timer); this.sessionStartedWaiter = null; resolve(); };
      this.sessionStartedWaiter = done;
      void this.harness?.exited.then(done);
    });
  }

  private onHarnessLine(text: string): void {
    if (!this.harnessTrusted || this.terminal) return;
    const message = parseHarnessMessage(text);
    if (typeof message === "string") return this.violation(message);
    if (message.type !== "ready") this.lastHarnessMessageSeq = message.messageSeq; // every process numbers its ready 1
    this.onHarnessMessage(message);
  }

  private onHarnessMessage(message: HarnessMessage): void {
    const log = this.harness!.log;
    switch (message.type) {
      case "ready": {
        const p = message as HarnessMessage<"ready">;
        if (this.harnessReady) return void this.emit("harness.diagnostic", { code: "duplicate_ready", message: `harness said ready again (message ${p.messageSeq})` });
        this.harnessReady = true;
        return this.readyWaiter?.();
      }
      case "log":
        return log.push((message as HarnessMessage<"log">).payload.text);
      case "diagnostic": {
        const { code, message: text } = (message as HarnessMessage<"diagnostic">).payload;
        return log.push(`[${code}] ${text}`);
      }
      case "event":
        return this.onHarnessEvent((message as HarnessMessage<"event">).payload);
      case "result":
        return this.onResult((message as HarnessMessage<"result">).payload.payload);
      case "terminal":
        if (this.proposal) return void this.emit("harness.diagnostic", { code: "duplicate_terminal_ignored", message: "the harness proposed a second terminal; the first one stands" });
        this.proposal = (message as HarnessMessage<"terminal">).payload.payload;
        return;
    }
  }

  private onHarnessEvent(e: HarnessMessage<"event">["payload"]): void {
    if (RUNNER_OWNED.test(e.eventType)) return this.violation(`harness may not report ${e.eventType}: the runner reports run, harness and runner events`);
    if (e.eventType === "runtime_request.created") {
      const request = decodeValue(e.payload.request, { kind: "request" });
      if (!request.ok) return this.violation(`harness request is not a valid request: ${request.error.path || "/"}: ${request.error.message}`);
    }
    if (!this.emitFromHarness(e.eventType, e.payload, { turnId: e.turnId, itemId: e.itemId })) return;
    if (e.eventType === "runtime_request.created") {
      const request = e.payload.request as PendingRequest;
      this.pendingRequests.set(request.requestId, request);
    } else if ((e.eventType === "runtime.phase.changed" && e.payload.phase === "executing") || e.eventType === "session.failed") {
      this.sessionStartedWaiter?.();
    } else if (e.eventType === "runtime_request.resolved") {
      this.pendingRequests.delete(String(e.payload.requestId));
    } else if (/^turn\.(completed|failed|interrupted|cancelled)$/.test(e.eventType)) {
      this.turnEnded = true;
    }
  }

  private onResult(payload: Record<string, unknown>): void {
    if (this.result) return void this.emit("harness.diagnostic", { code: "duplicate_semantic_result_ignored", message: "the harness proposed a second result; the first one stands" });
    const checked = decodeValue(payload, { kind: "result" });
    if (!checked.ok) return this.violation(`harness result is not a valid run result: ${checked.error.path || "/"}: ${checked.error.message}`);
    if (this.emitFromHarness("run.result.proposed", payload, { turnId: this.turnId ?? undefined })) this.result = checked.value;
  }

  /** Emits an event the harness supplied; a contract violation is the harness's fault. */
  private emitFromHarness(eventType: string, payload: Record<string, unknown>, ids: { turnId?: string | undefined; itemId?: string | undefined }): boolean {
    try {
      this.emit(eventType, payload, ids);
      return true;
    } catch (err) {
      if (!(err instanceof ContractViolation)) throw err;
      this.violation(`harness ${eventType} event breaks the contract: ${err.error.path || "/"}: ${err.error.message}`);
      return false;
    }
  }

  /** A harness that breaks the protocol is not believed again, and its group is ended. */
  private violation(message: string): void {
    if (!this.harnessTrusted) return;
    this.harnessTrusted = false;
    this.setIntent("protocol_violation");
    this.emit("harness.diagnostic", { code: "harness_protocol_violation", message });
    this.terminating = true;
    void this.harness?.terminate();
  }

  private setIntent(intent: Intent): void {
    this.intent ??= intent;
  }

  /**
   * Ends the run for a reason of the runner's own: the controller went away, or a signal; with
   * no intent, the run ends on its facts alone (a restarted runner whose harness is gone).
   */
  async stop(intent: Intent | null): Promise<void> {
    if (this.terminal) return;
    if (intent) this.setIntent(intent);
    this.terminating = true;
    if (this.harness) await this.harness.terminate();
    else await this.finish();
  }

  /**
   * After the harness exits (or was never started): let stdout drain, end the whole group so no
   * worker survives, then report the exit and the one terminal. Runs once.
   */
  private finish(): Promise<void> {
    this.finishing ??= (async () => {
      let exit: ExitFact | null = null;
      if (this.harness) {
        const h = this.harness;
        const drained = await Promise.race([h.stdoutEnded.then(() => true), delay(this.options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS).then(() => false)]);
        exit = await h.terminate(); // SIGKILL to the group even after a clean exit: reaps workers (runtime.md §4.7)
        if (!drained) await h.stdoutEnded; // a worker held stdout open; it is gone now
        this.emit("harness.exited", { ...exit, semanticResultObserved: this.result !== null, log: h.log.snapshot() });
      }
      const terminal = reconcileTerminal({ intent: this.intent, exit, result: this.result, proposal: this.proposal });
      this.emit("run.terminal", terminal as unknown as Record<string, unknown>, { turnId: this.turnId ?? undefined });
      this.terminal = terminal;
      this.resolveDone(terminal);
    })();
    return this.finishing;
  }

  /**
   * Suspends the run without ending it (runner.suspend): the harness group is ended and its exit
   * reported, but no terminal is decided — the session stays for a later resume.
   */
  async suspend(): Promise<void> {
    if (this.terminal || this.finishing) return;
    this.suspended = true;
    this.terminating = true;
    if (!this.harness) return;
    const h = this.harness;
    const exit = await h.terminate();
    this.emit("harness.exited", { ...exit, semanticResultObserved: this.result !== null, log: h.log.snapshot(), suspended: true });
  }

  /** An event the runner reports about itself (for example runner.reconciled after a restart). */
  emitRunnerEvent(eventType: string, payload: Record<string, unknown>): void {
    this.emit(eventType, payload);
  }

  private tell<K extends HarnessCommandType>(type: K, payload: HarnessCommandPayloads[K]): void {
    this.harness?.writeLine(JSON.stringify({ schema: COMMAND_SCHEMA, commandSeq: ++this.commandSeq, type, payload }));
  }

  private emit(eventType: string, payload: Record<string, unknown>, ids: { turnId?: string | undefined; itemId?: string | undefined } = {}): void {
    if (this.terminal) return; // nothing follows run.terminal
    const flowing = this.sink.emit(eventType, payload, { ...(ids.turnId ? { turnId: ids.turnId } : {}), ...(ids.itemId ? { itemId: ids.itemId } : {}) });
    if (!flowing && this.harness && !this.harnessPaused) {
      const h = this.harness;
      this.harnessPaused = true;
      h.pause();
      this.sink.onDrain(() => {
        this.harnessPaused = false;
        h.resume();
      });
    }
  }
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
