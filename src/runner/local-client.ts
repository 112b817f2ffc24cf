import { sequencedId } from "../contract/ids.js";
import type { PrpEvent } from "../contract/kinds.js";
import type { ExitFact, SupervisedProcess } from "../harness/supervisor.js";
import { superviseRunnerd } from "./spawn.js";
import { parseStreamRecord, type CommandReceipt } from "./stream.js";

export interface LocalClientOptions {
  runId: string;
  sessionId: string;
  runnerId: string;
  /** The fake harness script; absent when extraArgs choose another harness. */
  scriptPath?: string;
  delayMs?: number;
  /** Extra prp-runnerd flags (limits, a different harness). */
  extraArgs?: string[];
  /** Another prp-runnerd entry to run (another build); by default this package's. */
  runnerd?: string;
  /** Variables for the runner besides PATH (a crash point for the fault entry, src/fault/faulty-runnerd.ts). */
  env?: Record<string, string>;
  onEvent: (event: PrpEvent) => void;
  onReceipt: (receipt: CommandReceipt) => void;
  /** A stream line that is not a record of paperclip.runner.stream.v1. */
  onBadLine: (line: string) => void;
}

/**
 * The controller side of the local stdio protocol: starts `prp-runnerd --local` in its own
 * process group (so a terminal's Ctrl-C reaches only the controller, which decides what it
 * means), sends PRP v1 commands with contiguous controllerSeq, and hands back every event and
 * receipt the runner writes.
 */
export class LocalRunnerClient {
  private seq = 0;
  private readonly runner: SupervisedProcess;

  constructor(private readonly options: LocalClientOptions) {
    this.runner = superviseRunnerd({
      // Tests only: a module run in place of prp-runnerd, to hand the controller a forged stream (test/cli/forged-stream.test.ts).
      ...(options.runnerd ? { runnerd: options.runnerd } : {}),
      args: [
        "--local",
        "--run-id",
        options.runId,
        "--session-id",
        options.sessionId,
        "--runner-id",
        options.runnerId,
        ...(options.scriptPath ? ["--script", options.scriptPath] : []),
        ...(options.delayMs !== undefined ? ["--delay-ms", String(options.delayMs)] : []),
        ...(options.extraArgs ?? []),
      ],
      ...(options.env ? { env: options.env } : {}),
      // Runner stream lines carry whole events, up to a frame each.
      maxLineBytes: 2 * 1024 * 1024,
      onLine: (line) => {
        const record = parseStreamRecord(line);
        if (record === null) options.onBadLine(line);
        else if (record.kind === "event") options.onEvent(record.event);
        else options.onReceipt(record.receipt);
      },
      onOversize: (bytes) => options.onBadLine(`[a runner line of ${bytes} bytes]`),
    });
  }

  get pid(): number {
    return this.runner.pid;
  }

  /** Sends one command; returns its commandId. */
  send(type: string, payload: Record<string, unknown> = {}, commandId?: string): string {
    const seq = ++this.seq;
    const id = commandId ?? sequencedId("command", this.options.runId, seq, 3);
    this.runner.writeLine(
      JSON.stringify({
        schema: "paperclip.prp.command.v1",
        commandId: id,
        controllerSeq: seq,
        type,
        issuedAt: new Date().toISOString(),
        payload,
      }),
    );
    return id;
  }

  /** Sends a line as it is (tests of the command rules). */
  sendRaw(line: string): void {
    this.runner.writeLine(line);
  }

  /** Closes the runner's stdin: after run.terminal, or to close the run (controller_closed). */
  close(): void {
    this.runner.closeStdin();
  }

  /** Resolves when the runner has exited and all its output was delivered. */
  async exited(): Promise<ExitFact> {
    const fact = await this.runner.exited;
    await this.runner.stdoutEnded;
    return fact;
  }

  /** The runner's stderr tail, for a report when something went wrong. */
  stderrTail(): string[] {
    return this.runner.log.snapshot().lines;
  }

  /** Ends the runner's group (which ends its harness through the runner's own cleanup). */
  terminate(): Promise<ExitFact> {
    return this.runner.terminate();
  }
}
