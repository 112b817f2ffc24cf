import { decodeLine } from "../contract/decode.js";
import type * as T from "../contract/generated/types.js";

/**
 * The local stdio protocol between a runner and a fake harness (wire.md §14.5, runtime.md §4.3):
 * JSON lines of `paperclip.fake_harness.message.v1` (harness → runner) and
 * `paperclip.fake_harness.command.v1` (runner → harness). Both are checked by their schemas.
 */
export const MESSAGE_SCHEMA = "paperclip.fake_harness.message.v1";
export const COMMAND_SCHEMA = "paperclip.fake_harness.command.v1";

export interface HarnessMessagePayloads {
  ready: T.HarnessReadyPayload;
  /** A PRP event the runner wraps in its envelope. */
  event: T.HarnessEventPayload;
  result: T.HarnessProposalPayload;
  terminal: T.HarnessProposalPayload;
  log: T.HarnessLogPayload;
  diagnostic: T.HarnessDiagnosticPayload;
  /** The harness's session goal after a goal command or a change of its own. */
  goal: T.HarnessGoalPayload;
}
export type HarnessMessageType = T.PRPFakeHarnessMessage["type"];

export interface HarnessMessage<K extends HarnessMessageType = HarnessMessageType> extends T.PRPFakeHarnessMessage {
  type: K;
  payload: HarnessMessagePayloads[K];
}

export interface HarnessCommandPayloads {
  "session.open": T.HarnessSessionOpenPayload;
  "turn.start": T.HarnessTurnStartPayload;
  "request.resolve": T.HarnessRequestResolvePayload;
  "turn.interrupt": T.HarnessTurnInterruptPayload;
  "session.goal.get": T.HarnessEmptyPayload;
  "session.goal.set": T.HarnessGoalSetPayload;
  "session.goal.clear": T.HarnessEmptyPayload;
}
export type HarnessCommandType = T.PRPFakeHarnessCommand["type"];

export interface HarnessCommand<K extends HarnessCommandType = HarnessCommandType> extends T.PRPFakeHarnessCommand {
  type: K;
  payload: HarnessCommandPayloads[K];
}

/** Parses one harness stdout line; a string is why it is not a message of this protocol, with the path. */
export function parseHarnessMessage(line: string): HarnessMessage | string {
  const decoded = decodeLine(line, "fake-harness-message");
  return decoded.ok
    ? (decoded.value as HarnessMessage)
    : `harness message is not valid: ${decoded.error.path || "/"}: ${decoded.error.message}`;
}

/** Parses one runner → harness line, or null when it is not a command of this protocol. */
export function parseHarnessCommand(line: string): HarnessCommand | null {
  const decoded = decodeLine(line, "fake-harness-command");
  return decoded.ok ? (decoded.value as HarnessCommand) : null;
}
