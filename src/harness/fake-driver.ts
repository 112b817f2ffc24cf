import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import { packageRoot } from "../contract/package-root.js";
import type * as T from "../contract/generated/types.js";
import type { GoalOperation, HarnessDriver, HarnessListener, SessionOpen } from "./harness-driver.js";
import {
  COMMAND_SCHEMA,
  parseHarnessMessage,
  type HarnessCommandPayloads,
  type HarnessCommandType,
  type HarnessMessage,
} from "./harness-protocol.js";
import { DEFAULT_MAX_LINE_BYTES } from "./line-reader.js";
import { FAKE_CREDENTIAL_FILE_ENV } from "./fake-credentials.js";
import { FAKE_HARNESS_JOURNAL_ENV } from "./goal-journal.js";
import { whenGone } from "./gone.js";
import { harnessView, type SandboxPolicy } from "./sandbox/sandbox-policy.js";
import { SupervisedProcess } from "./supervisor.js";
import { activityDirOf } from "./notification-env.js";

export interface FakeDriverOptions {
  /** The fake harness script (a file path). */
  scriptPath: string;
  /** Passed to the harness: every delay step takes this long. */
  delayMs?: number;
  /** The runner's own variables for the harness (runtime.md §13.2), besides PATH. */
  runtimeEnv?: Record<string, string>;
  /** Another executable speaking the fake-harness protocol (tests of misbehaving harnesses). */
  executable?: string;
  maxLineBytes?: number;
  logMaxLines?: number;
  logMaxBytes?: number;
  graceMs?: number;
  /** The credential file the harness's credentials steps change (given to it as PRP_FAKE_CREDENTIAL_FILE). */
  credentialFile?: string;
  /** Where the harness notes its goal answers for a replacement (PRP_FAKE_HARNESS_JOURNAL): a file in the runner's private state. */
  journalPath?: string;
  /** The sandbox the harness runs in; absent: none. */
  sandbox?: SandboxPolicy;
}

/**
 * The fake harness as a driver (runtime.md §4.3): `prp fake-harness --script X` in its own
 * process group, speaking `paperclip.fake_harness.*` JSON lines. A replacement harness is told
 * how many messages its predecessor delivered and replays its script silently up to there.
 */
export class FakeHarnessDriver implements HarnessDriver {
  readonly kind = "fake";
  /** The fake harness keeps a session goal and answers every goal action (its script may change it too). */
  readonly sessionGoals: T.SessionGoalCapability = {
    availability: "available",
    actions: ["get", "set", "pause", "resume", "clear"],
  };
  readonly command: string;
  private readonly args: string[];
  private harness: SupervisedProcess | null = null;
  private commandSeq = 0;
  /** The last message the runner received, from any process of this driver. */
  private lastMessageSeq = 0;
  private readySeen = false;

  constructor(private readonly options: FakeDriverOptions) {
    const scriptArgs = [
      "--script",
      options.scriptPath,
      ...(options.delayMs !== undefined ? ["--delay-ms", String(options.delayMs)] : []),
    ];
    if (options.executable) {
      this.command = options.executable;
      this.args = scriptArgs;
    } else {
      this.command = process.execPath;
      this.args = [join(packageRoot(), "dist/src/harness/fake-harness-process.js"), ...scriptArgs];
    }
  }

  start(listener: HarnessListener): void {
    const o = this.options;
    const limit = o.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.readySeen = false;
    this.commandSeq = 0;
    let trusted = true;
    const violation = (message: string) => {
      if (!trusted) return;
      trusted = false; // a harness that broke its protocol is not read any further
      listener.fact({ kind: "violation", message });
    };
    const env = {
      ...o.runtimeEnv,
      ...(o.credentialFile ? { [FAKE_CREDENTIAL_FILE_ENV]: o.credentialFile } : {}),
      ...(o.journalPath ? { [FAKE_HARNESS_JOURNAL_ENV]: o.journalPath } : {}),
    };
    // What the sandbox shows must exist before the harness starts: the journal as a file, the
    // credential file's folder (the harness writes a new file there and renames it over the old).
    if (o.journalPath && o.sandbox) closeSync(openSync(o.journalPath, "a", 0o600));
    if (o.credentialFile && o.sandbox) mkdirSync(dirname(o.credentialFile), { recursive: true, mode: 0o700 });
    const view = harnessView(o.sandbox, {
      readable: [o.scriptPath, ...(o.executable ? [o.executable] : []), ...activityDirOf(env)],
      // The credential steps write a temporary file beside the credential file and rename it.
      writable: [...(o.credentialFile ? [dirname(o.credentialFile)] : []), ...(o.journalPath ? [o.journalPath] : [])],
    });
    const h = new SupervisedProcess({
      command: this.command,
      args: this.args,
      ...(o.credentialFile || o.runtimeEnv || o.journalPath ? { env } : {}),
      ...(view ? { sandbox: view } : {}),
      maxLineBytes: limit,
      ...(o.logMaxLines ? { logMaxLines: o.logMaxLines } : {}),
      ...(o.logMaxBytes ? { logMaxBytes: o.logMaxBytes } : {}),
      ...(o.graceMs !== undefined ? { graceMs: o.graceMs } : {}),
      onLine: (text) => {
        if (!trusted) return;
        const message = parseHarnessMessage(text);
        if (typeof message === "string") return violation(message);
        this.onMessage(message, listener, h);
      },
      onOversize: (bytes) => violation(`harness wrote a stdout line of ${bytes} bytes, over the ${limit}-byte limit`),
    });
    this.harness = h;
    void h.exited.then((exit) => listener.fact({ kind: "exited", exit }));
    void whenGone(h, o.graceMs).then((gone) => {
      if (this.harness === h) this.harness = null;
      listener.gone(gone);
    });
  }

  private onMessage(message: HarnessMessage, listener: HarnessListener, h: SupervisedProcess): void {
    if (message.type !== "ready") this.lastMessageSeq = message.messageSeq; // every process numbers its ready 1
    switch (message.type) {
      case "ready":
        if (this.readySeen)
          return listener.fact({
            kind: "event",
            eventType: "harness.diagnostic",
            payload: { code: "duplicate_ready", message: `harness said ready again (message ${message.messageSeq})` },
          });
        this.readySeen = true;
        return listener.fact({
          kind: "ready",
          pid: h.pid,
          resumePoint: { resumedAfterMessageSeq: this.lastMessageSeq },
        });
      case "log":
        return h.log.push((message as HarnessMessage<"log">).payload.text);
      case "diagnostic": {
        const { code, message: text } = (message as HarnessMessage<"diagnostic">).payload;
        return h.log.push(`[${code}] ${text}`);
      }
      case "event": {
        const e = (message as HarnessMessage<"event">).payload;
        return listener.fact({
          kind: "event",
          eventType: e.eventType,
          payload: e.payload,
          ...(e.turnId ? { turnId: e.turnId } : {}),
          ...(e.itemId ? { itemId: e.itemId } : {}),
        });
      }
      case "result":
        return listener.fact({ kind: "result", payload: (message as HarnessMessage<"result">).payload.payload });
      case "terminal":
        return listener.fact({
          kind: "terminal_proposal",
          payload: (message as HarnessMessage<"terminal">).payload.payload,
        });
      case "goal": {
        const { change, goal } = (message as HarnessMessage<"goal">).payload;
        return listener.fact({ kind: "goal", change, goal });
      }
    }
  }

  openSession(open: SessionOpen): void {
    this.tell("session.open", {
      normalizedSessionId: open.normalizedSessionId,
      driverSessionId: open.driverSessionId,
      ...(open.resume ? { resumeAfterMessageSeq: this.lastMessageSeq } : {}),
    });
  }

  startTurn(turn: { turnId: string; text?: string }): void {
    this.tell("turn.start", { turnId: turn.turnId, ...(turn.text !== undefined ? { text: turn.text } : {}) });
  }

  interrupt(reason: string): void {
    this.tell("turn.interrupt", { reason });
  }

  resolveRequest(requestId: string, resolution: Record<string, unknown>): void {
    this.tell("request.resolve", { requestId, resolution });
  }

  goal(operation: GoalOperation): void {
    const { action, ...fields } = operation;
    this.tell(`session.goal.${action}`, fields);
  }

  stop(): void {
    void this.harness?.terminate();
  }

  pause(): void {
    this.harness?.pause();
  }

  resume(): void {
    this.harness?.resume();
  }

  private tell<K extends HarnessCommandType>(type: K, payload: HarnessCommandPayloads[K]): void {
    this.harness?.writeLine(JSON.stringify({ schema: COMMAND_SCHEMA, commandSeq: ++this.commandSeq, type, payload }));
  }
}
