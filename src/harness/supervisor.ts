import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { BoundedLineReader, DEFAULT_MAX_LINE_BYTES } from "./line-reader.js";
import { BoundedLogBuffer } from "./log-tail.js";
import { OrphanGuard } from "./orphan-guard.js";
import { groupAlive, registerGroup, releaseGroup, signalGroup } from "./process-groups.js";
import { sandboxedCommand } from "./sandbox/sandbox-command.js";
import type { SandboxPaths } from "./sandbox/sandbox-policy.js";

/** How a supervised process ended (runtime.md §4.7). */
export interface ExitFact {
  exitCode: number | null;
  signal: string | null;
  success: boolean;
}

export interface SuperviseOptions {
  command: string;
  args: string[];
  /** Variables passed on purpose. The child gets these and PATH, nothing else. */
  env?: Record<string, string>;
  cwd?: string;
  /**
   * Run the process in the sandbox (src/harness/sandbox/) with this view: its own PID, user and
   * mount namespaces. Absent: a plain child of this process (`--sandbox none`, and runners).
   */
  sandbox?: SandboxPaths;
  maxLineBytes?: number;
  logMaxLines?: number;
  logMaxBytes?: number;
  /** Time between SIGTERM and SIGKILL to the group. Default DEFAULT_SHUTDOWN_GRACE_MS. */
  graceMs?: number;
  /**
   * The group is not ended when this process ends, by whatever way (no orphan guard, no exit
   * hook): a worker's runners, each of which finishes its run under its own lease.
   */
  outlivesOwner?: boolean;
  /** One complete stdout line within the limit. */
  onLine: (text: string) => void;
  /** A stdout line over the limit: a protocol violation the caller decides about. */
  onOversize: (bytes: number) => void;
  /** A stdout line has just grown past the limit, and has not ended (it may never end). */
  onOverlong?: () => void;
}

/** The grace between SIGTERM and SIGKILL to a harness group (runtime.md §4.7, §4.8). */
export const DEFAULT_SHUTDOWN_GRACE_MS = 100;
const POLL_MS = 5;

/**
 * One harness process in its own process group, with bounded line reading on stdout, a bounded
 * log tail fed by stderr, and termination that reaches every process of the group. The group
 * is ended when this process exits (the 'exit' hook of process-groups.ts) and, by an orphan
 * guard, when it is killed without running any hook.
 */
export class SupervisedProcess {
  readonly pid: number;
  readonly log: BoundedLogBuffer;
  /** Resolves when the group leader has exited. */
  readonly exited: Promise<ExitFact>;
  /** Resolves when stdout has ended and every line of it was delivered. */
  readonly stdoutEnded: Promise<void>;
  private readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  private readonly graceMs: number;
  private readonly guard: OrphanGuard | null;
  private exitFact: ExitFact | null = null;

  constructor(options: SuperviseOptions) {
    this.graceMs = options.graceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
    this.log = new BoundedLogBuffer(options.logMaxLines, options.logMaxBytes);
    const env: Record<string, string> = { ...(process.env.PATH ? { PATH: process.env.PATH } : {}), ...options.env };
    const sandbox = options.sandbox
      ? sandboxedCommand(options.sandbox, options.cwd ?? process.cwd(), options.command, options.args)
      : null;
    this.guard = options.outlivesOwner ? null : OrphanGuard.start();
    // In the sandbox, descriptor 3 carries the harness's own exit status from the namespace's PID 1.
    this.child = spawn(sandbox?.command ?? options.command, sandbox?.args ?? options.args, {
      cwd: options.cwd,
      env,
      detached: true,
      stdio: sandbox ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe"],
    }) as ChildProcessByStdio<Writable, Readable, Readable>;
    if (this.child.pid === undefined) {
      this.guard?.release();
      sandbox?.cleanup();
      throw new Error(`cannot start ${options.command}`);
    }
    const reported = sandbox ? reportedExit(this.child.stdio[3] as Readable, this.log) : Promise.resolve(null);
    this.pid = this.child.pid;
    this.guard?.arm(this.pid); // detached: the child leads a group whose id is its pid
    if (!options.outlivesOwner) registerGroup(this.pid);
    this.child.stdin.on("error", () => {}); // a harness that exits early closes the pipe; writes then fail harmlessly

    const limit = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    const out = new BoundedLineReader(limit);
    const deliver = (events: ReturnType<BoundedLineReader["push"]>) => {
      for (const e of events) {
        if (e.kind === "line") options.onLine(e.text);
        else if (e.kind === "oversize") options.onOversize(e.bytes);
        else options.onOverlong?.();
      }
    };
    this.stdoutEnded = new Promise((resolve) => {
      this.child.stdout.on("data", (chunk: Buffer) => deliver(out.push(chunk)));
      this.child.stdout.on("end", () => {
        deliver(out.end());
        resolve();
      });
      this.child.stdout.on("error", () => resolve());
    });
    const err = new BoundedLineReader(limit);
    const note = (events: ReturnType<BoundedLineReader["push"]>) => {
      for (const e of events) {
        if (e.kind !== "overlong")
          this.log.push(
            e.kind === "line" ? e.text : `[stderr line of ${e.bytes} bytes over the ${limit}-byte limit, dropped]`,
          );
      }
    };
    this.child.stderr.on("data", (chunk: Buffer) => note(err.push(chunk)));
    this.child.stderr.on("end", () => note(err.end()));

    this.exited = new Promise((resolve) => {
      const settle = (fact: ExitFact) => {
        if (this.exitFact) return;
        this.exitFact = fact;
        // The leader was the group's last process: release the guard now, as the group's id is
        // free for reuse. With workers left, it stays armed until terminate() ends them.
        if (!groupAlive(this.pid)) this.guard?.release();
        resolve(fact);
      };
      // Sandboxed, the harness has exited when PID 1 says so: PID 1 and the launcher stay with
      // the harness's leftover workers, as the group does without the sandbox, until terminate().
      void reported.then((status) => status && settle(status));
      this.child.on("exit", (code, signal) => {
        sandbox?.cleanup();
        void reported.then(() => settle({ exitCode: code, signal, success: code === 0 }));
      });
    });
  }

  /** Writes one line to the harness's stdin; false if stdin is already closed. */
  writeLine(line: string): boolean {
    if (this.child.stdin.destroyed || this.child.stdin.writableEnded) return false;
    this.child.stdin.write(`${line}\n`);
    return true;
  }

  /** Stops reading stdout (the harness blocks once the pipe fills) until resume(): backpressure. */
  pause(): void {
    this.child.stdout.pause();
  }

  resume(): void {
    this.child.stdout.resume();
  }

  closeStdin(): void {
    if (!this.child.stdin.writableEnded) this.child.stdin.end();
  }

  /**
   * Ends the whole group: close stdin, SIGTERM the group, poll until the leader exits or the
   * grace passes, then SIGKILL the group — also after a clean exit, so that workers the harness
   * left behind are reaped — wait for the leader's exit fact, and release the orphan guard.
   */
  async terminate(): Promise<ExitFact> {
    this.closeStdin();
    if (this.exitFact === null) {
      signalGroup(this.pid, "SIGTERM");
      const deadline = Date.now() + this.graceMs;
      while (this.exitFact === null && Date.now() < deadline) await sleep(POLL_MS);
    }
    signalGroup(this.pid, "SIGKILL");
    const fact = await this.exited;
    for (let i = 0; i < 200 && groupAlive(this.pid); i++) await sleep(POLL_MS); // let the kernel finish the group
    releaseGroup(this.pid);
    this.guard?.release(); // what survives a SIGKILL is stuck in the kernel and dies on its way out
    return fact;
  }
}

/**
 * The sandboxed harness's exit as its namespace's PID 1 saw it (sandbox-init.ts): its status
 * line, as soon as it is whole; null when the descriptor closes without one (PID 1 killed first:
 * the launcher's own exit then says it). A harness that could not be started goes to the log tail.
 */
function reportedExit(status: Readable, log: BoundedLogBuffer): Promise<ExitFact | null> {
  let text = "";
  status.setEncoding("utf8");
  return new Promise((resolve) => {
    status.on("data", (chunk: string) => {
      text = (text + chunk).slice(0, 4096);
      const end = text.indexOf("\n");
      if (end < 0) return;
      try {
        const line = JSON.parse(text.slice(0, end)) as {
          exitCode?: number | null;
          signal?: NodeJS.Signals | null;
          error?: string;
        };
        if (typeof line.error === "string") log.push(`[sandbox] cannot start the harness: ${line.error}`);
        else if (line.exitCode !== undefined)
          return resolve({ exitCode: line.exitCode, signal: line.signal ?? null, success: line.exitCode === 0 });
      } catch {
        // not a status: the launcher's exit will say
      }
      resolve(null);
    });
    for (const event of ["end", "error", "close"]) status.on(event, () => resolve(null));
  });
}
