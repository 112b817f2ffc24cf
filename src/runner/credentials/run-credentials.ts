import type { PrpCommand } from "../../contract/kinds.js";
import { TURN_ENDS } from "../../contract/turn-ends.js";
import type { GatedEvent } from "../emit-gate.js";
import { CredentialObserver, type CredentialObserverOptions } from "./credential-observer.js";
import { memoryCredentialStore, type CredentialStore } from "./credential-store.js";
import { CREDENTIALS_UPDATED, HARNESS_AUTH_BINDING } from "./credentials-event.js";

/** What a run is configured to observe; the store is the runner's state in durable mode, memory otherwise. */
export type CredentialObservation = Omit<CredentialObserverOptions, "emit" | "store" | "bindingId"> & {
  store?: CredentialStore;
};

/**
 * A run's credential observation (runtime.md §13.1), at the run controller's boundaries: it
 * starts when run.prepare carries `observeCredentials: true` (or, after a restart, when the
 * state says the host opted in), looks again at each turn end and at suspend, and makes a final
 * check before the run's terminal, after which nothing follows. Without a configured credential
 * file it does nothing: the host then receives no event, which does not mean nothing changed.
 */
export class RunCredentials {
  private observer: CredentialObserver | null = null;
  private readonly store: CredentialStore;
  private ended = false;

  constructor(
    private readonly config: CredentialObservation | undefined,
    private readonly emit: (event: GatedEvent) => void,
  ) {
    this.store = config?.store ?? memoryCredentialStore();
  }

  /** A command the run carried out: run.prepare may opt in. */
  applied(command: PrpCommand): void {
    if (command.type === "run.prepare" && (command.payload as Record<string, unknown>).observeCredentials === true)
      this.observe();
  }

  /** A restarted runner observes again when its predecessor's host had opted in. */
  resume(): void {
    if (this.config && this.store.load(HARNESS_AUTH_BINDING) !== null) this.observe();
  }

  /** Called before each event the controller emits: the run's terminal gets a final check first. */
  beforeEmit(event: GatedEvent): void {
    if (event.eventType !== "run.terminal" || event.fromHarness) return;
    this.check();
    this.stop();
  }

  /** Called after each event the controller emits: a turn's end is a boundary to look at. */
  afterEmit(event: GatedEvent): void {
    if (TURN_ENDS.has(event.eventType)) this.check();
  }

  check(): void {
    this.observer?.check();
  }

  /** The run has ended or is closing: nothing more is observed or emitted. */
  stop(): void {
    this.ended = true;
    this.observer?.stop();
  }

  private observe(): void {
    if (!this.config || this.observer || this.ended) return;
    const store = this.store;
    this.observer = new CredentialObserver({
      ...this.config,
      store,
      emit: (payload) => {
        if (this.ended) return;
        this.emit({
          eventType: CREDENTIALS_UPDATED,
          payload: { ...payload },
          fromHarness: false,
          admitted: () => store.admitted(payload.bindingId, payload.revision),
        });
      },
    });
    this.observer.start();
  }
}
