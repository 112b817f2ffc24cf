/**
 * The priority class of an event type (wire.md §5.4, runtime.md §4.5): P0 is never dropped or
 * coalesced, P1 is persisted, P2 may be coalesced. Producers take the priority from here so
 * that every runner mode classifies alike.
 */
export type Priority = 0 | 1 | 2;

const P0 = new Set([
  "run.result.proposed",
  "run.terminal",
  "harness.exited",
  "turn.completed",
  "turn.failed",
  "turn.interrupted",
  "turn.cancelled",
  "session.started",
  "session.resumed",
  "session.failed",
  "item.failed",
  "runtime_request.created",
  "runtime_request.resolved",
  "runtime_request.expired",
  "runtime_request.cancelled",
  "interaction.request.proposed",
  "interaction.request.materialized",
  "interaction.request.rejected",
  "interaction.response.progressed",
  "interaction.response.resolved",
  "interaction.response.delivered",
  "runner.backpressure",
  "runner.draining",
  "runner.reconciled",
  "auth.credentials.updated",
]);
const P2 = new Set(["item.delta", "harness.diagnostic", "runner.diagnostic"]);
/**
 * Runner diagnostics that are P0: the v2/v3 backpressure report (wire.md §7.11), and this
 * project's `event_refused` and `runner_internal_error`, which say why a run failed closed and
 * so must never be dropped.
 */
const P0_DIAGNOSTICS = new Set<unknown>(["backpressure", "event_refused", "runner_internal_error"]);

/** `payloadCode` is the payload's `code`: some runner diagnostics are P0 (see P0_DIAGNOSTICS). */
export function priorityOf(eventType: string, payloadCode?: unknown): Priority {
  if (P0.has(eventType)) return 0;
  if (eventType === "runner.diagnostic" && P0_DIAGNOSTICS.has(payloadCode)) return 0;
  return P2.has(eventType) ? 2 : 1;
}
