import type { WorkerClaim, WorkerPoll, WorkerPollAnswer } from "../client/index.js";
import { backoffMs, DEFAULT_BACKOFF, type BackoffOptions } from "./backoff.js";
import { describeFailure, pollFailure } from "./poll-failure.js";
import { newRequestId } from "./request-id.js";
import type { RunnerExit, StartClaim, WorkerRunner } from "./start-claim.js";

/** POST /v1/workers/poll; `signal` ends a long poll that a runner's exit made stale. */
export type PollFunction = (body: WorkerPoll, signal: AbortSignal) => Promise<WorkerPollAnswer>;

export interface PollLoopOptions {
  labels: Record<string, string>;
  /** The agent profiles it advertises: it holds `agent=<name>` for each (none: omitted from the poll). */
  agents?: readonly string[];
  maxRuns: number;
  /** Claim one run, run it, report its exit, and end with its runner's exit status. */
  once?: boolean;
  /** How long the server may hold a poll that wants runs and finds none (default 1000). */
  waitMs?: number;
  poll: PollFunction;
  start: StartClaim;
  /**
   * Whether a run has not started (its dispatch claimed, no event committed): after the drain
   * timeout only such runs' runners are killed and their runs released. An error counts as started.
   */
  unstarted?: (runId: string) => Promise<boolean>;
  /** After a drain began, how long runs get before the unstarted ones are released. */
  drainTimeoutMs?: number;
  /** Progress lines for a person. */
  log: (line: string) => void;
  backoff?: Partial<BackoffOptions>;
  newRequestId?: () => string;
  /** Failed polls to report the last exits before giving up and exiting anyway. */
  finalReportAttempts?: number;
}

interface Held {
  runner: WorkerRunner;
  attempt: number;
  /** Killed by the drain timeout unstarted: its run goes back as `released`, not `exited`. */
  releasing: boolean;
}

type Exited = WorkerPoll["exited"][number];

const NO_WAKE = (): void => {};

/**
 * The worker's loop: one poll at a time, each a heartbeat that reports the runners' exits and
 * claims runs while there is room. A failed poll is sent again with the same requestId (the
 * server answers a repeat with the claims it already made, never new ones); a new requestId is
 * drawn only once a poll was answered. A runner that exits while a long poll waits aborts it,
 * and the same request goes again at once with the exit in it, so its slot is freed now.
 */
export class PollLoop {
  readonly #o: PollLoopOptions;
  readonly #backoff: BackoffOptions;
  readonly #held = new Map<string, Held>();
  /** Exits not yet carried by an answered poll: each is sent until one is. */
  #exited: Exited[] = [];
  #released: string[] = [];
  #draining = false;
  #stopSignal: NodeJS.Signals | null = null;
  /** 401/403 or another refusal: no poll can succeed; wait for the runners, exit 1. */
  #halted = false;
  #onceClaimed = false;
  #onceExit: number | null = null;
  #registered = false;
  /** The authority's heartbeat, once it said it: a held poll must not outlast half of it. */
  #heartbeatMs: number | null = null;
  #inflight: AbortController | null = null;
  #wakeIdle: () => void = NO_WAKE;
  /** Something changed since the last poll was sent: the next goes without waiting. */
  #news = false;
  #drainTimer: NodeJS.Timeout | null = null;

  constructor(options: PollLoopOptions) {
    this.#o = options;
    this.#backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
  }

  /** The runs whose runner is alive. */
  get held(): string[] {
    return [...this.#held.keys()];
  }

  /** Whether the authority refused this worker's credential: no poll will succeed again. */
  get halted(): boolean {
    return this.#halted;
  }

  /** Stop claiming; running runs finish; then run() resolves 0. */
  drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    this.#o.log(`draining: no new runs; waiting for ${this.#held.size} running`);
    if (this.#o.drainTimeoutMs !== undefined) {
      this.#drainTimer = setTimeout(() => void this.#releaseUnstarted(), this.#o.drainTimeoutMs);
    }
    this.#wake();
  }

  /** A second signal: SIGTERM every runner's group (each cancels its run); run() resolves 128 + signal. */
  stop(signal: NodeJS.Signals): void {
    this.#draining = true;
    this.#stopSignal ??= signal;
    this.#o.log(`stopping: cancelling ${this.#held.size} run(s)`);
    for (const held of this.#held.values()) held.runner.stop();
    this.#wake();
  }

  /** A third signal: SIGKILL every runner's group. */
  kill(): void {
    for (const held of this.#held.values()) held.runner.kill();
  }

  /** Polls until the worker is done: drained, --once done, or halted. Resolves to the exit status. */
  async run(): Promise<number> {
    try {
      return await this.#loop();
    } finally {
      if (this.#drainTimer) clearTimeout(this.#drainTimer);
    }
  }

  async #loop(): Promise<number> {
    let requestId = (this.#o.newRequestId ?? newRequestId)();
    let failures = 0;
    for (;;) {
      const waitMs = Math.min(this.#o.waitMs ?? 1000, this.#heartbeatMs === null ? Infinity : this.#halfBeat());
      if (this.#halted) {
        await this.#allExited();
        return 1;
      }
      const ending = this.#ending();
      if (ending && this.#exited.length === 0 && this.#released.length === 0) return this.#exitStatus();
      if (ending && failures >= (this.#o.finalReportAttempts ?? 3)) {
        this.#o.log(
          `could not report ${this.#exited.length + this.#released.length} run(s) to the authority; its sweep will end them`,
        );
        return this.#exitStatus();
      }
      this.#news = false;
      const body = this.#body(requestId, waitMs);
      const controller = new AbortController();
      this.#inflight = controller;
      const sentAt = Date.now();
      let answer: WorkerPollAnswer;
      try {
        answer = await this.#o.poll(body, controller.signal);
      } catch (err) {
        // Aborted by a runner's exit or a signal: the same request again at once, with the news.
        if (controller.signal.aborted) continue;
        const kind = pollFailure(err);
        if (kind !== "retry") {
          this.#halted = true;
          this.#o.log(
            kind === "revoked"
              ? `worker_revoked: the authority refused this worker's credential (${describeFailure(err)}); no new runs; ${this.#held.size} running run(s) finish, then exit 1. Make a new credential: prp authority worker add NAME --out FILE`
              : `poll_refused: ${describeFailure(err)}; no new runs; ${this.#held.size} running run(s) finish, then exit 1`,
          );
          continue;
        }
        const delay = backoffMs(failures++, this.#backoff);
        this.#o.log(`poll failed (${describeFailure(err)}); retrying in ${delay} ms`);
        await this.#idle(delay);
        continue;
      } finally {
        if (this.#inflight === controller) this.#inflight = null;
      }
      failures = 0;
      requestId = (this.#o.newRequestId ?? newRequestId)();
      // What this answered poll carried is reported; what came after it goes in the next.
      this.#exited = this.#exited.filter((e) => !body.exited.includes(e));
      this.#released = this.#released.filter((r) => !body.released.includes(r));
      await this.#apply(answer);
      if (answer.claims.length > 0 || this.#ending()) continue;
      // The server held a poll that wanted runs up to waitMs (an early answer waits out the
      // rest); one that wants none, or --poll-wait-ms 0, answers at once and is only a heartbeat.
      await this.#idle(body.want > 0 && waitMs > 0 ? Math.max(0, waitMs - (Date.now() - sentAt)) : this.#halfBeat());
    }
  }

  #halfBeat(): number {
    return Math.max(50, Math.floor((this.#heartbeatMs ?? 1000) / 2));
  }

  #want(): number {
    if (this.#draining || this.#halted || this.#onceClaimed) return 0;
    const room = Math.max(0, this.#o.maxRuns - this.#held.size);
    return this.#o.once ? Math.min(1, room) : room;
  }

  #body(requestId: string, waitMs: number): WorkerPoll {
    return {
      requestId,
      labels: this.#o.labels,
      ...(this.#o.agents && this.#o.agents.length > 0 ? { agents: [...this.#o.agents] } : {}),
      maxRuns: this.#o.maxRuns,
      draining: this.#draining || this.#onceClaimed,
      held: this.held,
      want: this.#want(),
      exited: [...this.#exited],
      released: [...this.#released],
      waitMs,
    };
  }

  /** Nothing more to claim and nothing running: report what is left, then exit. */
  #ending(): boolean {
    return (this.#draining || this.#onceClaimed) && this.#held.size === 0;
  }

  #exitStatus(): number {
    if (this.#stopSignal) return 128 + signalNumber(this.#stopSignal);
    if (this.#o.once) return this.#onceExit ?? (this.#onceClaimed ? 1 : 0);
    return 0;
  }

  async #apply(answer: WorkerPollAnswer): Promise<void> {
    this.#heartbeatMs = answer.heartbeatMs;
    if (!this.#registered) {
      this.#registered = true;
      this.#o.log(`registered as ${answer.workerId} (heartbeat ${answer.heartbeatMs} ms)`);
    }
    for (const runId of answer.lost) {
      const held = this.#held.get(runId);
      if (!held) continue;
      this.#o.log(`lost ${runId}: the authority took its run back; killing its runner`);
      held.runner.kill();
    }
    for (const claim of answer.claims) await this.#take(claim);
  }

  async #take(claim: WorkerClaim): Promise<void> {
    if (this.#held.has(claim.runId)) return; // already running here: the ticket is not needed
    // A drain (or --once done) began while the poll was out: the run goes back unstarted.
    if (this.#draining || this.#halted || this.#onceClaimed || this.#held.size >= this.#o.maxRuns) {
      this.#o.log(
        `released ${claim.runId}: ${this.#draining ? "claimed while draining" : "no room for it"}, not started`,
      );
      this.#released.push(claim.runId);
      return;
    }
    if (this.#o.once) this.#onceClaimed = true;
    this.#o.log(`claimed run ${claim.runId} (attempt ${claim.attempt})`);
    let runner: WorkerRunner;
    try {
      runner = await this.#o.start(claim);
    } catch (err) {
      this.#o.log(`run ${claim.runId}: its runner could not start: ${(err as Error).message}`);
      this.#exited.push({ runId: claim.runId, exitCode: null, signal: null });
      if (this.#o.once) this.#onceExit = 1;
      return;
    }
    const held: Held = { runner, attempt: claim.attempt, releasing: false };
    this.#held.set(claim.runId, held);
    void runner.exited.then((exit) => this.#onExit(claim.runId, held, exit));
  }

  #onExit(runId: string, held: Held, exit: RunnerExit): void {
    this.#held.delete(runId);
    if (held.releasing) {
      this.#released.push(runId);
      this.#o.log(`released ${runId}: not started by the drain timeout; its runner was killed`);
    } else {
      this.#exited.push({ runId, exitCode: exit.exitCode, signal: exit.signal });
      const how = exit.signal ? `killed by ${exit.signal}` : `exited ${exit.exitCode}`;
      const tail = exit.exitCode === 0 ? "" : exit.stderrTail.slice(-3).join(" | ");
      this.#o.log(`run ${runId}: runner ${how}${tail ? ` (${tail})` : ""}`);
    }
    if (this.#o.once) this.#onceExit = exit.exitCode ?? 1;
    this.#wake();
  }

  /** After the drain timeout: kill the runners of runs that have not started, and release those runs. */
  async #releaseUnstarted(): Promise<void> {
    for (const [runId, held] of [...this.#held]) {
      let unstarted = false;
      try {
        unstarted = (await this.#o.unstarted?.(runId)) ?? false;
      } catch (err) {
        this.#o.log(`run ${runId}: cannot tell whether it started (${describeFailure(err)}); letting it finish`);
      }
      if (!unstarted || !this.#held.has(runId)) continue;
      held.releasing = true;
      held.runner.kill();
    }
  }

  async #allExited(): Promise<void> {
    await Promise.all([...this.#held.values()].map((h) => h.runner.exited));
  }

  /** Something changed: a long poll in flight is stale, an idle wait is over. */
  #wake(): void {
    this.#news = true;
    this.#inflight?.abort();
    this.#wakeIdle();
  }

  #idle(ms: number): Promise<void> {
    if (this.#news) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wakeIdle = NO_WAKE;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wakeIdle = done;
    });
  }
}

const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGTERM: 15 };
const signalNumber = (signal: NodeJS.Signals): number => SIGNAL_NUMBERS[signal] ?? 1;
