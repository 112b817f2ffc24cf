import { ContractViolation, type ContractError } from "../contract/errors.js";
import type { EventSink, PendingEvent } from "./event-sink.js";

export interface GatedEvent extends PendingEvent {
  /** The harness reported it: a contract violation is then the harness's fault, not a bug. */
  fromHarness: boolean;
  /** Called once the sink has admitted it (the terminal: the run is over only then). */
  admitted?: () => void;
}

export interface EmitGateHooks {
  /** The sink is behind: stop reading the harness until `resumeHarness`. */
  pauseHarness(): void;
  resumeHarness(): void;
  /** A harness event the contract refuses: it is not emitted, and the harness is at fault. */
  invalid(event: GatedEvent, error: ContractError): void;
  /** An event the sink can never admit (larger than it can ever hold, no canonical JSON form, or the runner's own event the contract refuses). */
  refused(event: GatedEvent, code: string, message: string): void;
}

/**
 * Where every event of a run passes on its way to the sink, in the order it happened
 * (runtime.md §5.7 backpressure). Nothing the harness reported is dropped: an event the sink
 * cannot take now waits here, at the head of the line, with everything after it; the harness
 * is paused (its pipe fills and it blocks) and the line moves again when the sink has room.
 * Only an event that can never fit is refused, and that is reported, never silent.
 */
export class EmitGate {
  private readonly queue: GatedEvent[] = [];
  private blocked = false;
  private paused = false;
  private draining = false;

  constructor(
    private readonly sink: EventSink,
    private readonly hooks: EmitGateHooks,
  ) {}

  /** Events waiting for the sink: the line is moving when this is 0. */
  get waiting(): number {
    return this.queue.length;
  }

  emit(event: GatedEvent): void {
    this.queue.push(event);
    if (!this.blocked && !this.draining) this.drain();
  }

  private drain(): void {
    this.draining = true;
    try {
      while (this.queue.length > 0 && !this.blocked) {
        const event = this.queue[0]!;
        let offer: ReturnType<EventSink["offer"]>;
        try {
          offer = this.sink.offer(event);
        } catch (err) {
          if (!(err instanceof ContractViolation)) throw err;
          this.queue.shift();
          // The runner's own event that breaks the contract can never be carried either: the
          // run fails closed with the reason, rather than the runner with a stack trace.
          if (event.fromHarness) this.hooks.invalid(event, err.error);
          else this.hooks.refused(event, err.error.code, `${err.error.path || "/"}: ${err.error.message}`);
          continue;
        }
        if (offer.kind === "full") {
          this.block();
          break;
        }
        this.queue.shift();
        if (offer.kind === "refused") this.hooks.refused(event, offer.code, offer.message);
        else {
          event.admitted?.();
          if (offer.congested) this.block();
        }
      }
    } finally {
      this.draining = false;
    }
  }

  private block(): void {
    this.blocked = true;
    if (!this.paused) {
      this.paused = true;
      this.hooks.pauseHarness();
    }
    this.sink.onRoom(() => {
      this.blocked = false;
      this.drain();
      if (this.blocked) return;
      this.paused = false;
      this.hooks.resumeHarness();
    });
  }
}
