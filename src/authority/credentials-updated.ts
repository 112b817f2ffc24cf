import type { PrpEvent } from "../contract/kinds.js";
import type { OnCommittedEvent } from "./ingest.js";

/**
 * The host's reaction to a harness credential update (runtime.md §13.1, wire.md §7.6): it runs
 * inside the commit of the auth.credentials.updated event, after onCommittedEvent and before
 * the ACK. If it throws, the event is rolled back and not acknowledged, and the runner resends
 * it with the same sourceEventId: deduplicate by that id. The event only says that the binding
 * has a new revision; the host reads the credential itself, through its own channel and checks.
 */
export type OnCredentialsUpdated = (event: PrpEvent, context: Parameters<OnCommittedEvent>[1]) => Promise<void> | void;

/** onCommittedEvent, followed for credential updates by onCredentialsUpdated, in the same commit. */
export function withCredentialsCallback(
  onCommitted: OnCommittedEvent | undefined,
  onCredentials: OnCredentialsUpdated | undefined,
): OnCommittedEvent | undefined {
  if (!onCredentials) return onCommitted;
  return async (event, context) => {
    await onCommitted?.(event, context);
    if (event.eventType === "auth.credentials.updated") await onCredentials(event, context);
  };
}
