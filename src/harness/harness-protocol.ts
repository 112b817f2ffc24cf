/**
 * The local stdio protocol between a runner and a fake harness (wire.md §14.5, runtime.md §4.3):
 * JSON lines of `paperclip.fake_harness.message.v1` (harness → runner) and
 * `paperclip.fake_harness.command.v1` (runner → harness).
 */
export const MESSAGE_SCHEMA = "paperclip.fake_harness.message.v1";
export const COMMAND_SCHEMA = "paperclip.fake_harness.command.v1";

export interface HarnessMessagePayloads {
  ready: Record<string, never>;
  /** A PRP event the runner wraps in its envelope. */
  event: { eventType: string; turnId?: string; itemId?: string; payload: Record<string, unknown> };
  result: { payload: Record<string, unknown> };
  terminal: { payload: Record<string, unknown> };
  log: { text: string };
  diagnostic: { code: string; message: string };
}
export type HarnessMessageType = keyof HarnessMessagePayloads;
export const HARNESS_MESSAGE_TYPES: readonly HarnessMessageType[] = ["ready", "event", "result", "terminal", "log", "diagnostic"];

export interface HarnessMessage<T extends HarnessMessageType = HarnessMessageType> {
  schema: typeof MESSAGE_SCHEMA;
  messageSeq: number;
  type: T;
  payload: HarnessMessagePayloads[T];
}

export interface HarnessCommandPayloads {
  /** `resumeAfterMessageSeq`: a restarted harness replays its script silently up to this message. */
  "session.open": { normalizedSessionId: string; driverSessionId: string; resumeAfterMessageSeq?: number };
  "turn.start": { turnId: string; text?: string };
  "request.resolve": { requestId: string; resolution: Record<string, unknown> };
  "turn.interrupt": { reason: string };
}
export type HarnessCommandType = keyof HarnessCommandPayloads;

export interface HarnessCommand<T extends HarnessCommandType = HarnessCommandType> {
  schema: typeof COMMAND_SCHEMA;
  commandSeq: number;
  type: T;
  payload: HarnessCommandPayloads[T];
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** Parses one harness stdout line; a string is the reason it is not a message this protocol knows. */
export function parseHarnessMessage(line: string): HarnessMessage | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return "harness wrote a line that is not JSON";
  }
  if (!isObject(value) || value.schema !== MESSAGE_SCHEMA) return `harness message has schema ${JSON.stringify(isObject(value) ? value.schema : undefined)}, not ${MESSAGE_SCHEMA}`;
  if (!Number.isSafeInteger(value.messageSeq)) return "harness message has no integer messageSeq";
  if (!HARNESS_MESSAGE_TYPES.includes(value.type as HarnessMessageType)) return `harness message type ${JSON.stringify(value.type)} is unknown`;
  if (!isObject(value.payload)) return `harness ${String(value.type)} message has no payload object`;
  const p = value.payload;
  const bad =
    (value.type === "event" && (typeof p.eventType !== "string" || !isObject(p.payload))) ||
    ((value.type === "result" || value.type === "terminal") && !isObject(p.payload)) ||
    (value.type === "log" && typeof p.text !== "string") ||
    (value.type === "diagnostic" && (typeof p.code !== "string" || typeof p.message !== "string"));
  if (bad) return `harness ${String(value.type)} message has a malformed payload`;
  return value as unknown as HarnessMessage;
}

/** Parses one runner → harness line, or null when it is not a command of this protocol. */
export function parseHarnessCommand(line: string): HarnessCommand | null {
  try {
    const value = JSON.parse(line) as unknown;
    return isObject(value) && value.schema === COMMAND_SCHEMA && typeof value.type === "string" && isObject(value.payload) ? (value as unknown as HarnessCommand) : null;
  } catch {
    return null;
  }
}
