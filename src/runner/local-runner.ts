import type * as T from "../contract/generated/types.js";
import type { ActivityPayload } from "./activity/activity-input.js";
import type { RecordOutcome } from "./activity/activity-endpoint.js";
import { CommandIntake } from "./command-intake.js";
import { streamSink, type LineOutput } from "./event-sink.js";
import { RunController, type RunControllerOptions } from "./run-controller.js";
import { SUPPORTED_COMMANDS } from "./run-machine.js";
import { receiptRecordLine, type CommandReceipt } from "./stream.js";

export interface LocalRunnerOptions extends Omit<RunControllerOptions, "coalesce"> {
  runnerId: string;
  commandHistoryLimit?: number;
}

/**
 * The runner in local (stdio) mode (runtime.md §4): PRP command lines in, stream records out.
 * Each line is admitted by the command rules and answered with a receipt, then carried out by
 * the run controller, strictly one at a time in arrival order.
 */
export class LocalRunner {
  private readonly intake: CommandIntake;
  private readonly controller: RunController;
  private queue: Promise<void> = Promise.resolve();
  /** Resolves with the run's terminal once it has been written. */
  readonly done: Promise<T.PRPRunTerminal>;

  constructor(
    options: LocalRunnerOptions,
    private readonly out: LineOutput,
  ) {
    this.intake = new CommandIntake(SUPPORTED_COMMANDS, options.commandHistoryLimit);
    this.controller = new RunController(
      options,
      streamSink({ runId: options.runId, normalizedSessionId: options.sessionId, runnerId: options.runnerId }, out),
    );
    this.done = this.controller.done;
  }

  /** One line from the controller. */
  acceptLine(line: string): void {
    this.queue = this.queue.then(() => this.handleLine(line));
  }

  /** A controller line over the limit: refused with a receipt, the stream goes on. */
  acceptOversizeLine(bytes: number): void {
    this.queue = this.queue.then(() => {
      this.writeReceipt({
        commandId: null,
        controllerSeq: null,
        type: null,
        status: "rejected",
        code: "frame_too_large",
        reason: `command line of ${bytes} bytes is over the limit`,
      });
    });
  }

  /** The controller closed our stdin (runtime.md §4.2: ControllerClosed and a group terminate). */
  controllerClosed(): void {
    this.queue = this.queue.then(() => this.controller.stop("controller_closed"));
  }

  /** The runner was told to stop by a signal: the run is cancelled and the group terminated. */
  cancel(): void {
    void this.controller.stop("cancelled");
  }

  /** The process's last guard: an error nothing handled ends the run failed, with a diagnostic. */
  failInternal(message: string): void {
    this.controller.failInternal(message);
  }

  /** runtime.md §13.2 in local mode: "recorded" once the event's stream record is written out to stdout. */
  async recordActivity(payload: ActivityPayload): Promise<RecordOutcome> {
    const outcome = await this.controller.recordActivity(payload);
    if (outcome === "recorded" && this.out.flush) await new Promise<void>((done) => this.out.flush!(done));
    return outcome;
  }

  private async handleLine(line: string): Promise<void> {
    const { receipt, command } = this.intake.admit(line);
    if (!command) return this.writeReceipt(receipt);
    const refusal = this.controller.refusal(command);
    this.writeReceipt(refusal ? { ...receipt, status: "rejected", ...refusal } : receipt);
    if (!refusal) await this.controller.apply(command);
  }

  private writeReceipt(receipt: CommandReceipt): void {
    this.out.write(receiptRecordLine(receipt));
  }
}
