import { spawn } from "node:child_process";
import { recordThroughHelper } from "./record-through-helper.js";
import { setTimeout as sleep } from "node:timers/promises";
import type * as T from "../contract/generated/types.js";
import { playCredentialStep } from "./fake-credentials.js";
import { GoalJournal, type Goal } from "./goal-journal.js";
import {
  MESSAGE_SCHEMA,
  type HarnessCommand,
  type HarnessCommandType,
  type HarnessMessagePayloads,
  type HarnessMessageType,
} from "./harness-protocol.js";

export type Script = T.PRPFakeHarnessScript;
export type Step =
  | T.DelayStep
  | T.LogStep
  | T.EventStep
  | T.RequestStep
  | T.AwaitResolutionStep
  | T.StepWithoutFields
  | T.ResultOrTerminalStep
  | T.RecordActivityStep
  | T.ExitStep
  | T.GoalStep
  | T.CredentialsStep;

export interface FakeHarnessIo {
  /** Writes one protocol line to stdout. */
  writeStdout(line: string): void;
  writeStderr(line: string): void;
  /** Ends the process with this code once output is flushed. */
  exit(code: number): void;
}

export interface FakeHarnessOptions {
  /** Overrides every delay step (`--delay-ms`). */
  delayMs?: number;
  /** How long to wait for session.open and turn.start (runtime.md §4.3: 10 s). */
  commandWaitMs?: number;
  /** How long to wait for a request.resolve (runtime.md §4.3: 5 min). */
  resolutionWaitMs?: number;
  /** The credential file that credentials steps change; without it they change nothing. */
  credentialFile?: string;
  /** Where goal answers are noted for a replacement harness (goal-journal.ts); without it a replacement cannot account for them. */
  journalPath?: string;
}

class WaitTimeout extends Error {}

/**
 * The harness side of the local stdio protocol, playing a `paperclip.fake_harness.script.v1`:
 * ready; session.open → session.started and phase executing; turn.start → turn.started; then
 * the steps in order (wire.md §15.4). Exits 0 after the last step unless a step exits first.
 */
export class FakeHarness {
  private messageSeq = 0;
  private turnId = "";
  private readonly inbox: HarnessCommand[] = [];
  private wake: (() => void) | null = null;
  private inputClosed = false;
  /** After a restart: messages up to this number were delivered by the previous process. */
  private resumeAfter = 0;
  /** The session goal (runtime.md §9); goal commands are answered as they arrive, between steps. */
  private goal: Goal = null;
  private goalCommands = 0;
  private goalCommandsAwaited = 0;
  private readonly journal: GoalJournal;
  /** The goal answers the predecessor sent, by message number: the replay steps over them. */
  private answeredBefore = new Map<number, Goal>();
  /** Goal commands not answered yet: they wait until this process has caught up with its predecessor. */
  private readonly goalBacklog: HarnessCommand[] = [];
  private opened = false;

  constructor(
    private readonly script: Script,
    private readonly io: FakeHarnessIo,
    private readonly options: FakeHarnessOptions = {},
  ) {
    this.journal = new GoalJournal(options.journalPath);
  }

  /** Hands the harness one command the runner sent. */
  receive(command: HarnessCommand): void {
    if (command.type.startsWith("session.goal.")) {
      this.goalBacklog.push(command);
      this.answerBacklog();
    } else {
      this.inbox.push(command);
    }
    this.wake?.();
  }

  /**
   * Answers the waiting goal commands once the session is open and the replay has reached the
   * last message the runner received: before that, neither the goal nor the next message number
   * is the one the runner knows (a runner asks for the goal right after it opens or resumes).
   */
  private answerBacklog(): void {
    this.passAnswered();
    if (!this.opened || this.messageSeq < this.resumeAfter) return;
    for (const command of this.goalBacklog.splice(0)) this.answerGoal(command);
  }

  /** Steps over the predecessor's goal answers at this point of the replay: their numbers, and the goal each left. */
  private passAnswered(): void {
    while (this.answeredBefore.has(this.messageSeq + 1)) {
      this.goal = this.answeredBefore.get(++this.messageSeq)!;
      this.goalCommands++;
    }
  }

  /** get answers with the snapshot; set changes the fields it names; clear forgets the goal. */
  private answerGoal(command: HarnessCommand): void {
    this.goalCommands++;
    if (command.type === "session.goal.clear") {
      this.goal = null;
      return this.sendGoalAnswer("cleared");
    }
    const set = command.type === "session.goal.set" ? (command as HarnessCommand<"session.goal.set">).payload : null;
    const objective = set?.objective ?? this.goal?.objective;
    // A set with no objective, and no goal to change, changes nothing: it reads as a get.
    if (!set || objective === undefined) return this.sendGoalAnswer("snapshot");
    this.goal = {
      objective,
      status: set.status ?? (this.goal?.status === "paused" ? "paused" : "active"),
      workingNow: false,
      tokenBudget: set.tokenBudget !== undefined ? set.tokenBudget : (this.goal?.tokenBudget ?? null),
    };
    this.sendGoalAnswer("updated");
  }

  private sendGoalAnswer(change: "snapshot" | "updated" | "cleared"): void {
    this.journal.note(this.messageSeq + 1, this.goal);
    this.send("goal", { change, goal: this.goal });
  }

  /** The runner closed our stdin: nothing more will arrive. */
  closeInput(): void {
    this.inputClosed = true;
    this.wake?.();
  }

  async run(): Promise<void> {
    try {
      this.send("ready", {});
      const open = await this.next("session.open", this.options.commandWaitMs ?? 10_000);
      this.resumeAfter = open.payload.resumeAfterMessageSeq ?? 0;
      if (this.resumeAfter === 0) this.journal.reset();
      else this.answeredBefore = this.journal.answersUpTo(this.resumeAfter);
      this.opened = true;
      this.answerBacklog();
      this.emit("session.started", { driverSessionId: open.payload.driverSessionId });
      this.emit("runtime.phase.changed", { phase: "executing" });
      const turn = await this.next("turn.start", this.options.commandWaitMs ?? 10_000);
      this.turnId = turn.payload.turnId;
      this.emit("turn.started", {});
      for (const step of this.script.steps as Step[]) {
        // A closed stdin means the runner is gone or ending us: nobody is left to report to.
        if (this.inputClosed) return this.io.exit(1);
        const exitCode = await this.play(step);
        if (exitCode !== undefined) return this.io.exit(exitCode);
      }
      this.io.exit(0);
    } catch (err) {
      this.send("diagnostic", {
        code: err instanceof WaitTimeout ? "harness_wait_timeout" : "harness_error",
        message: (err as Error).message,
      });
      this.io.exit(2);
    }
  }

  private async play(step: Step): Promise<number | undefined> {
    switch (step.kind) {
      case "delay":
        if (!this.replaying(1)) await sleep(this.options.delayMs ?? (step as T.DelayStep).milliseconds);
        return undefined;
      case "log": {
        const s = step as T.LogStep;
        if (s.stream === "stdout") this.send("log", { text: s.text });
        else this.io.writeStderr(s.text);
        return undefined;
      }
      case "event": {
        const s = step as T.EventStep;
        this.emit(s.event_type, s.payload, s.item_id, s.turn_id);
        return undefined;
      }
      case "request":
        this.emit("runtime_request.created", { request: (step as T.RequestStep).request });
        return undefined;
      case "await_resolution": {
        const requestId = (step as T.AwaitResolutionStep).request_id;
        if (this.replaying(1)) return void this.emit("runtime_request.resolved", { requestId }); // answered before the restart
        const resolve = await this.next(
          "request.resolve",
          this.options.resolutionWaitMs ?? 300_000,
          (c) => c.payload.requestId === requestId,
        );
        this.emit("runtime_request.resolved", { requestId, resolution: resolve.payload.resolution });
        return undefined;
      }
      case "await_interrupt": {
        // Tell the controller the turn now waits for an interrupt, then wait with no deadline:
        // only turn.interrupt or the runner's cleanup ends this step.
        this.emit("runtime.phase.changed", { phase: "awaiting_interrupt" });
        if (this.replaying(1)) return void this.emit("turn.interrupted", {}); // interrupted before the restart
        const interrupt = await this.next("turn.interrupt", Number.POSITIVE_INFINITY);
        this.emit("turn.interrupted", { reason: interrupt.payload.reason });
        return undefined;
      }
      case "spawn_worker":
        if (this.replaying(0)) return undefined; // the previous process spawned it
        // A grandchild in our process group with a cleared environment, holding no pipe of ours.
        spawn("/bin/sh", ["-c", "sleep 60"], { env: {}, stdio: "ignore" }).unref();
        return undefined;
      case "record_activity": {
        if (this.replaying(1)) return void this.send("log", { text: "" }); // recorded before the restart
        const s = step as T.RecordActivityStep;
        this.send("log", { text: await recordThroughHelper(s.namespace, s.activity_key) });
        return undefined;
      }
      case "result":
      case "terminal":
        this.send(step.kind, { payload: (step as T.ResultOrTerminalStep).payload });
        return undefined;
      case "exit":
        return (step as T.ExitStep).code;
      case "goal":
        this.goal = (step as T.GoalStep).goal;
        this.send("goal", { change: this.goal ? "updated" : "cleared", goal: this.goal });
        return undefined;
      case "await_goal_command":
        // Answered before the restart, or now: the step waits for one goal command of its own.
        if (!this.replaying(1))
          await this.waitUntil(
            () => this.goalCommands > this.goalCommandsAwaited,
            this.options.resolutionWaitMs ?? 300_000,
            "a goal command",
          );
        this.goalCommandsAwaited++;
        return undefined;
      case "credentials": {
        const skipped = playCredentialStep(step as T.CredentialsStep, this.options.credentialFile);
        if (skipped) this.io.writeStderr(skipped);
        return undefined;
      }
    }
  }

  private emit(eventType: string, payload: Record<string, unknown>, itemId?: string, turnId?: string): void {
    const turn = turnId ?? (this.turnId || undefined);
    this.send("event", { eventType, payload, ...(turn ? { turnId: turn } : {}), ...(itemId ? { itemId } : {}) });
  }

  /** Whether the message `ahead` numbers from now was already delivered before a restart. */
  private replaying(ahead: number): boolean {
    return this.messageSeq + ahead <= this.resumeAfter;
  }

  private send<K extends HarnessMessageType>(type: K, payload: HarnessMessagePayloads[K]): void {
    if (type !== "ready") this.passAnswered();
    if (type !== "ready" && this.messageSeq + 1 <= this.resumeAfter) {
      this.messageSeq++; // replayed silently: the runner already has this message
      this.answerBacklog(); // the last one replayed: the goal commands waiting are answered now
      return;
    }
    this.io.writeStdout(JSON.stringify({ schema: MESSAGE_SCHEMA, messageSeq: ++this.messageSeq, type, payload }));
  }

  /** The next command of a type (others wait in the inbox), or a WaitTimeout. */
  private async next<K extends HarnessCommandType>(
    type: K,
    waitMs: number,
    match: (c: HarnessCommand<K>) => boolean = () => true,
  ): Promise<HarnessCommand<K>> {
    const found = () => this.inbox.findIndex((c) => c.type === type && match(c as HarnessCommand<K>));
    await this.waitUntil(() => found() >= 0, waitMs, type);
    return this.inbox.splice(found(), 1)[0] as HarnessCommand<K>;
  }

  /** Waits until `ready()` holds, or throws a WaitTimeout naming `what`. */
  private async waitUntil(ready: () => boolean, waitMs: number, what: string): Promise<void> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (ready()) return;
      if (this.inputClosed) throw new WaitTimeout(`stdin closed while waiting for ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new WaitTimeout(`no ${what} within ${waitMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = Number.isFinite(left) ? setTimeout(resolve, left) : undefined;
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }
}
