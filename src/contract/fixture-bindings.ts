import { canonicalJson } from "./canonical-json.js";
import { contractError, type ContractError } from "./errors.js";
import type { PRPReplayFixture } from "./generated/types.js";
import type { PrpCommand, PrpEvent } from "./kinds.js";

/**
 * The binding checks of a schema-valid replay fixture (wire.md §15.1). Each failure is
 * binding_mismatch: the fixture is well-formed but does not describe one coherent run.
 */
export function fixtureBindingError(fixture: PRPReplayFixture): ContractError | null {
  return (
    commandSequenceError(fixture) ??
    eventIdentityError(fixture) ??
    singleFactError(fixture) ??
    semanticToolError(fixture)
  );
}

type Event = PrpEvent;
const fail = (path: string, message: string) => contractError("binding_mismatch", path, message);

/** Commands are contiguous from 1, and a commandId (an idempotency key) names one command. */
function commandSequenceError(fixture: PRPReplayFixture): ContractError | null {
  const ids = new Set<string>();
  for (const [i, command] of (fixture.commands as PrpCommand[]).entries()) {
    if (command.controllerSeq !== i + 1)
      return fail(
        `/commands/${i}/controllerSeq`,
        `controllerSeq is ${command.controllerSeq}; commands must be contiguous from 1, so position ${i + 1} needs ${i + 1}`,
      );
    if (ids.has(command.commandId))
      return fail(`/commands/${i}/commandId`, `commandId "${command.commandId}" names two different commands`);
    ids.add(command.commandId);
  }
  return null;
}

/**
 * Every event belongs to the fixture's run and session, and so does the binding of a v3
 * external-provider payload; a repeated id repeats the same bytes.
 */
function eventIdentityError(fixture: PRPReplayFixture): ContractError | null {
  const { runId, normalizedSessionId } = fixture.identity;
  const firstCopy = new Map<string, string>();
  for (const [i, event] of (fixture.events as Event[]).entries()) {
    if (event.runId !== runId)
      return fail(`/events/${i}/runId`, `event runId "${event.runId}" is not the fixture run "${runId}"`);
    if (event.normalizedSessionId !== undefined && event.normalizedSessionId !== normalizedSessionId) {
      return fail(
        `/events/${i}/normalizedSessionId`,
        `event session "${event.normalizedSessionId}" is not the fixture session "${normalizedSessionId}"`,
      );
    }
    const binding = (event.payload as { binding?: { runId?: unknown; normalizedSessionId?: unknown } }).binding;
    if (
      event.eventType.startsWith("external_provider.") &&
      binding &&
      (binding.runId !== runId || binding.normalizedSessionId !== normalizedSessionId)
    ) {
      return fail(
        `/events/${i}/payload/binding`,
        "the external-provider binding does not name the fixture's run and session",
      );
    }
    const bytes = canonicalJson(event);
    const first = firstCopy.get(event.sourceEventId);
    if (first === undefined) firstCopy.set(event.sourceEventId, bytes);
    else if (first !== bytes)
      return fail(`/events/${i}`, `sourceEventId "${event.sourceEventId}" is repeated with different content`);
  }
  return null;
}

/** Unique events (first copy of each id) of one type, with their positions. */
function uniqueOfType(fixture: PRPReplayFixture, type: string): Array<[number, Event]> {
  const seen = new Set<string>();
  const out: Array<[number, Event]> = [];
  for (const [i, event] of (fixture.events as Event[]).entries()) {
    if (seen.has(event.sourceEventId)) continue;
    seen.add(event.sourceEventId);
    if (event.eventType === type) out.push([i, event]);
  }
  return out;
}

function singleFactError(fixture: PRPReplayFixture): ContractError | null {
  const results = uniqueOfType(fixture, "run.result.proposed");
  if (results.length !== 1)
    return fail("/events", `a fixture needs exactly one run.result.proposed; it has ${results.length}`);
  const [at, proposed] = results[0]!;
  if (canonicalJson(proposed.payload) !== canonicalJson(fixture.result)) {
    return fail(`/events/${at}/payload`, "the run.result.proposed payload differs from the fixture result");
  }
  const terminals = uniqueOfType(fixture, "run.terminal");
  if (terminals.length !== 1)
    return fail("/events", `a fixture needs exactly one run.terminal; it has ${terminals.length}`);
  return null;
}

const RECEIPT_EVENTS = new Set([
  "semantic_tool.input",
  "semantic_tool.result",
  "semantic_tool.reconciled",
  "mcp_app.tool_input",
  "mcp_app.tool_result",
]);
interface Receipt {
  phase?: unknown;
  callId?: unknown;
  operationId?: unknown;
  idempotencyKey?: unknown;
  correlation?: unknown;
}

function semanticToolError(fixture: PRPReplayFixture): ContractError | null {
  return semanticToolBindingError(fixture.events as Event[], fixture.identity);
}

/**
 * wire.md §7.4's fixture binding rule, for any transcript: every semantic tool call has one
 * input and one settlement (result, or reconciled on v1 only), agreeing on operation,
 * idempotency key and correlation, and correlated to the run.
 */
export function semanticToolBindingError(
  events: readonly Event[],
  identity: { runId: string; normalizedSessionId: string },
): ContractError | null {
  const calls = new Map<string, { input: Array<[number, Receipt]>; settled: Array<[number, Receipt]> }>();
  const seen = new Set<string>();
  for (const [i, event] of events.entries()) {
    if (seen.has(event.sourceEventId) || !RECEIPT_EVENTS.has(event.eventType)) continue;
    seen.add(event.sourceEventId);
    const receipt = (event.payload as Record<string, unknown>).semantic_tool as Receipt | undefined;
    if (receipt === undefined || receipt === null || typeof receipt !== "object") continue;
    const path = `/events/${i}/payload/semantic_tool`;
    if (typeof receipt.callId !== "string") return fail(path, "a semantic tool receipt needs a callId");
    if (receipt.phase === "reconciled" && event.schemaVersion !== 1)
      return fail(`${path}/phase`, "a reconciled receipt exists only in PRP v1 (wire.md O6)");
    const correlation = receipt.correlation as Record<string, unknown> | undefined;
    if (correlation?.runId !== identity.runId || correlation?.normalizedSessionId !== identity.normalizedSessionId) {
      return fail(`${path}/correlation`, "the receipt correlation does not name the fixture's run and session");
    }
    for (const key of ["turnId", "itemId"] as const) {
      if (event[key] !== undefined && correlation[key] !== event[key]) {
        return fail(
          `${path}/correlation/${key}`,
          `the receipt correlation ${key} "${String(correlation[key])}" is not the event's "${event[key]}"`,
        );
      }
    }
    const call = calls.get(receipt.callId) ?? { input: [], settled: [] };
    (receipt.phase === "input" ? call.input : call.settled).push([i, receipt]);
    calls.set(receipt.callId, call);
  }
  for (const [callId, call] of calls) {
    if (call.input.length !== 1)
      return fail(
        "/events",
        `semantic tool call "${callId}" has ${call.input.length} input receipts; it needs exactly one`,
      );
    if (call.settled.length !== 1)
      return fail(
        "/events",
        `semantic tool call "${callId}" has ${call.settled.length} result or reconciled receipts; it needs exactly one`,
      );
    const [, input] = call.input[0]!;
    const [at, settled] = call.settled[0]!;
    for (const field of ["operationId", "idempotencyKey", "correlation"] as const) {
      if (canonicalJson(input[field] ?? null) !== canonicalJson(settled[field] ?? null)) {
        return fail(
          `/events/${at}/payload/semantic_tool/${field}`,
          `semantic tool call "${callId}" settles with a different ${field} than its input`,
        );
      }
    }
  }
  return null;
}
