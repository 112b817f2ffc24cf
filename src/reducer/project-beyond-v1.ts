import type { PrpEvent, SessionGoalSnapshot } from "../contract/index.js";
import { finite, isRecord, text, type Json } from "./payload.js";
import type { UsageMeasurement, UsageTotals } from "./snapshot.js";
import { credentialKey, type BeyondV1State } from "./state.js";

const stringOrNull = (value: unknown): string | null => (typeof value === "string" ? value : null);

const MEASUREMENT_FIELDS = [
  "inputTokens",
  "outputTokens",
  "cacheReadTokens",
  "cacheWriteTokens",
  "activeSeconds",
  "requests",
  "providerCostUsd",
] as const;

/** A measurement built figure by figure, in MEASUREMENT_FIELDS order. */
function perFigure(figure: (field: (typeof MEASUREMENT_FIELDS)[number]) => number | null): UsageMeasurement {
  const out = {} as UsageMeasurement;
  for (const field of MEASUREMENT_FIELDS) out[field] = figure(field);
  return out;
}

const measurement = (value: Json): UsageMeasurement => perFigure((f) => finite(value[f]));

/** Figure by figure; unknown in either operand stays unknown in the sum. */
const add = (a: UsageMeasurement, b: UsageMeasurement): UsageMeasurement =>
  perFigure((f) => (a[f] === null || b[f] === null ? null : a[f] + b[f]));

function addUsage(usage: UsageTotals | undefined, payload: Json): UsageTotals {
  const totals = usage ?? { reports: 0, runTotal: null, sessionCumulative: null };
  totals.reports += 1;
  if (payload.runDeltaAvailable === true && isRecord(payload.runDelta)) {
    const delta = measurement(payload.runDelta);
    totals.runTotal = totals.runTotal ? add(totals.runTotal, delta) : delta;
  }
  if (isRecord(payload.cumulative)) {
    totals.sessionCumulative = {
      provider: stringOrNull(payload.provider),
      model: stringOrNull(payload.model),
      ...measurement(payload.cumulative),
    };
  }
  return totals;
}

/**
 * The projection of the event types beyond v1 into their own snapshot sections (documented on
 * SessionSnapshot). Payloads are copied, never shared with the event. Other types project nothing.
 */
export function projectBeyondV1(state: BeyondV1State, event: PrpEvent, payload: Json): void {
  const type = event.eventType;
  switch (type) {
    case "session.capabilities.updated":
      state.sessionCapabilities = structuredClone(payload);
      break;
    case "session.goal.snapshot":
    case "session.goal.updated":
    case "session.goal.cleared": {
      const goal =
        type !== "session.goal.cleared" && isRecord(payload.goal)
          ? (structuredClone(payload.goal) as unknown as SessionGoalSnapshot)
          : null;
      state.sessionGoal = { goal, lastEventType: type };
      break;
    }
    case "usage.reported":
      state.usage = addUsage(state.usage, payload);
      break;
    case "plan.updated":
      if (typeof payload.planId === "string") state.plans.set(payload.planId, structuredClone(payload));
      break;
    case "tool.execution.started":
    case "tool.execution.progressed":
    case "tool.execution.completed":
      if (typeof payload.executionId === "string") {
        state.toolExecutions.set(payload.executionId, {
          ...state.toolExecutions.get(payload.executionId),
          ...structuredClone(payload),
        });
      }
      break;
    case "auth.credentials.updated":
      recordCredential(state, event.sourceEventId, payload);
      break;
    case "runtime.activity.recorded":
      state.runtimeActivity.push({
        sourceEventId: event.sourceEventId,
        namespace: text(payload.namespace),
        activityKey: text(payload.activityKey),
      });
  }
}

/** Keeps the highest revision per provider and binding: revisions only increase, so a lower one is stale. */
function recordCredential(state: BeyondV1State, sourceEventId: string, payload: Json): void {
  const provider = text(payload.provider);
  const bindingId = text(payload.bindingId);
  const revision = finite(payload.revision) ?? 0;
  const key = credentialKey(provider, bindingId);
  const known = state.credentials.get(key);
  if (known && known.revision >= revision) return;
  state.credentials.set(key, { provider, bindingId, revision, detection: text(payload.detection), sourceEventId });
}
