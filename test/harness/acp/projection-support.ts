import { decodeValue } from "../../../src/contract/decode.js";
import type { HarnessFact } from "../../../src/harness/harness-driver.js";
import { AcpProjection, type AcpInput } from "../../../src/harness/acp/projection.js";
import { buildEvent } from "../../../src/runner/event-envelope.js";
import type { PrpEvent } from "../../../src/contract/kinds.js";

export const SESSION = "acp_session_1";
export const TURN = "turn_1";
export const CONTEXT = { runId: "run_1", sessionId: "session_1", cwd: "/workspace" };

const rpc = (message: Record<string, unknown>) => ({ jsonrpc: "2.0", ...message });
export const sent = (id: number, method: string, params: unknown = {}): AcpInput => ({
  kind: "sent",
  message: rpc({ id, method, params }),
});
export const received = (message: Record<string, unknown>): AcpInput => ({ kind: "received", message: rpc(message) });
export const update = (u: Record<string, unknown>, sessionId = SESSION): AcpInput =>
  received({ method: "session/update", params: { sessionId, update: u } });
export const chunk = (text: string, kind = "agent_message_chunk"): AcpInput =>
  update({ sessionUpdate: kind, content: { type: "text", text } });

/** The wire up to an open turn: spawn, initialize, session/new, the turn, session/prompt. */
export function opening(capabilities: Record<string, unknown> = {}): AcpInput[] {
  return [
    { kind: "spawned", pid: 4242 },
    sent(0, "initialize", { protocolVersion: 1 }),
    received({
      id: 0,
      result: {
        protocolVersion: 1,
        agentCapabilities: capabilities,
        agentInfo: { name: "agent", version: "1.2.3" },
        authMethods: [{ id: "login", name: "Log in" }],
      },
    }),
    sent(1, "session/new", { cwd: "/workspace", mcpServers: [] }),
    received({ id: 1, result: { sessionId: SESSION } }),
    { kind: "turn", turnId: TURN },
    sent(2, "session/prompt", { sessionId: SESSION, prompt: [] }),
  ];
}

export const promptAnswer = (stopReason: string): AcpInput => received({ id: 2, result: { stopReason } });
export const promptError = (code: number, message: string): AcpInput => received({ id: 2, error: { code, message } });

export function projectAll(inputs: AcpInput[], projection = new AcpProjection(CONTEXT)): HarnessFact[] {
  return inputs.flatMap((input) => projection.project(input));
}

export const eventsOf = (facts: HarnessFact[]) =>
  facts.filter((f): f is Extract<HarnessFact, { kind: "event" }> => f.kind === "event");
export const typesOf = (facts: HarnessFact[]) => facts.map((f) => (f.kind === "event" ? f.eventType : f.kind));

/** Why an event fact would not pass the codec in a runner envelope, or null. */
export function codecProblem(fact: Extract<HarnessFact, { kind: "event" }>): string | null {
  const event = buildEvent({
    sourceSeq: 1,
    sourceEventId: "event_1",
    emittedAt: "2026-08-07T21:00:00.001Z",
    sourceInstanceId: "runner_1",
    runId: CONTEXT.runId,
    normalizedSessionId: CONTEXT.sessionId,
    eventType: fact.eventType,
    payload: fact.payload,
    turnId: fact.turnId,
    itemId: fact.itemId,
  });
  const checked = decodeValue(event, { kind: "event" });
  return checked.ok ? null : `${fact.eventType}: ${checked.error.path}: ${checked.error.message}`;
}

/** The wire of a permission request for `toolCallId`, with its raw input when given. */
export function permissionRequest(
  id: unknown,
  options: { sessionId?: string; toolCallId?: unknown; kind?: string; rawInput?: unknown } = {},
): AcpInput {
  const toolCall = {
    toolCallId: options.toolCallId ?? "call_1",
    title: "Run npm install",
    kind: options.kind ?? "execute",
    ...(options.rawInput !== undefined ? { rawInput: options.rawInput } : {}),
  };
  return received({
    id,
    method: "session/request_permission",
    params: {
      sessionId: options.sessionId ?? SESSION,
      toolCall,
      options: [
        { optionId: "allow", name: "Allow", kind: "allow_once" },
        { optionId: "reject", name: "Reject", kind: "reject_once" },
      ],
    },
  });
}

/** The driver's answer to a permission request: the option it chose, or cancelled. */
export const permissionAnswer = (id: unknown, optionId: string | null): AcpInput => ({
  kind: "sent",
  message: {
    jsonrpc: "2.0",
    id,
    result: { outcome: optionId === null ? { outcome: "cancelled" } : { outcome: "selected", optionId } },
  },
});

/** The driver's answer to a question (an elicitation/create). */
export const questionAnswer = (id: unknown, result: Record<string, unknown>): AcpInput => ({
  kind: "sent",
  message: { jsonrpc: "2.0", id, result },
});

/** A form elicitation of the agent's. */
export const elicitation = (
  id: unknown,
  requestedSchema: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): AcpInput =>
  received({
    id,
    method: "elicitation/create",
    params: { sessionId: SESSION, mode: "form", message: "The agent needs details.", requestedSchema, ...extra },
  });

/** Event facts as runner envelopes (sequenced from 1), for checks that read whole transcripts. */
export function envelopes(facts: HarnessFact[]): PrpEvent[] {
  return eventsOf(facts).map(
    (f, i) =>
      buildEvent({
        sourceSeq: i + 1,
        sourceEventId: `event_${i + 1}`,
        emittedAt: "2026-08-07T21:00:00.001Z",
        sourceInstanceId: "runner_1",
        runId: CONTEXT.runId,
        normalizedSessionId: CONTEXT.sessionId,
        eventType: f.eventType,
        payload: f.payload,
        turnId: f.turnId,
        itemId: f.itemId,
      }) as PrpEvent,
  );
}

/** The violation a wire fails closed with: its message and typed reason. */
export function violationOf(facts: HarnessFact[]): { message: string; code?: string } | undefined {
  return facts.find((f): f is Extract<HarnessFact, { kind: "violation" }> => f.kind === "violation");
}
