import { canonicalJson } from "../../contract/canonical-json.js";
import { canonicalDigest, sha256Hex } from "../../contract/digest.js";
import { projectId } from "./acp-ids.js";
import { redact } from "../redaction.js";
import { cutText } from "../../contract/text-cut.js";

type Obj = Record<string, unknown>;

/** The run identity a receipt is correlated to (wire.md §7.4): the authority checks it equals the run's. */
export interface Correlation {
  runId: string;
  normalizedSessionId: string;
  turnId: string;
  itemId: string;
}

/** How a call authorised by an allowed permission ended. */
export type CallEnd = "completed" | "failed" | "turn_ended";

export type ReceiptEvent = { eventType: "semantic_tool.input" | "semantic_tool.result"; payload: Obj; itemId: string };

interface OpenCall {
  receipt: Obj;
  digest: string;
  settled: boolean;
}

const OUTCOMES: Record<CallEnd, [string, string]> = {
  completed: ["succeeded", "completed"],
  failed: ["failed", "tool_failed"],
  turn_ended: ["unavailable", "turn_ended"],
};
/** The semantic input limit (runtime.md §7.2): 480 KiB of encoded JSON. */
const MAX_INPUT_BYTES = 480 * 1024;

/**
 * An ACP tool call's raw input as it may travel in PRP: its credentials replaced by "[redacted]"
 * (`redact`), and an input canonical JSON cannot hold or over the semantic input
 * limit is replaced by a note of its size. `redacted` says whether anything was replaced.
 */
export function sanitiseInput(raw: unknown): { input: unknown; redacted: boolean } {
  const { value: input, redacted } = redact(raw ?? null);
  let bytes: number;
  try {
    bytes = Buffer.byteLength(canonicalJson(input));
  } catch {
    return { input: { unrepresentable: true }, redacted: true };
  }
  return bytes > MAX_INPUT_BYTES ? { input: { truncated: true, bytes }, redacted: true } : { input, redacted };
}

/**
 * Seed 002 rule 3 for ACP. ACP has no semantic operations of its own, so the projection decides
 * what an *authorised* tool call is: one whose `session/request_permission` was answered with an
 * allow option (by the controller or by the permission policy). Right after that answer the call
 * gets one `semantic_tool.input` receipt (`paperclip.prp.semantic_tool.v1`) carrying the
 * sanitised raw input and its canonical digest; when the call ends — its update says completed
 * or failed, or the turn ends first — exactly one `semantic_tool.result` settles it. A call never
 * allowed gets no receipt. Once a call has its input receipt, the same call announced with a
 * different input is an unstable receipt identity: `unstable` says so, and the projection fails
 * closed.
 */
export class SemanticReceipts {
  private readonly calls = new Map<string, OpenCall>();

  constructor(private readonly runId: string) {}

  /** The input receipt of a call just allowed, or none when it already has one with the same input. */
  authorise(
    toolCallId: string,
    kind: unknown,
    rawInput: unknown,
    correlation: Correlation,
    grantId: string,
  ): { events: ReceiptEvent[] } | { unstable: string } {
    const { input, redacted } = sanitiseInput(rawInput);
    const digest = canonicalDigest(input);
    const known = this.calls.get(toolCallId);
    if (known)
      return known.digest === digest
        ? { events: [] }
        : { unstable: this.unstableMessage(toolCallId, known.digest, digest) };
    const operationId = `acp.tool.${typeof kind === "string" && /^[a-z][a-z0-9_]{0,63}$/.test(kind) ? kind : "other"}`;
    const receipt: Obj = {
      schema: "paperclip.prp.semantic_tool.v1",
      schemaVersion: 1,
      phase: "input",
      operationId,
      callId: toolCallId,
      correlation,
      idempotencyKey: `acp_call_${sha256Hex(`${this.runId}\0${toolCallId}`).slice(0, 32)}`,
      content: { digest, redactionDisposition: redacted ? "redacted" : "none", references: [] },
    };
    this.calls.set(toolCallId, { receipt: { ...receipt, auditReceiptId: grantId }, digest, settled: false });
    return {
      events: [
        { eventType: "semantic_tool.input", payload: { semantic_tool: receipt, input }, itemId: correlation.itemId },
      ],
    };
  }

  /** A later announcement of a call's input: an unstable receipt identity when it differs from the receipt's. */
  check(toolCallId: string, rawInput: unknown): string | null {
    const known = this.calls.get(toolCallId);
    if (!known || rawInput === undefined) return null;
    const digest = canonicalDigest(sanitiseInput(rawInput).input);
    return digest === known.digest ? null : this.unstableMessage(toolCallId, known.digest, digest);
  }

  /** The one result receipt of an authorised call, once it ends; nothing for a call without an input receipt. */
  settle(toolCallId: string, end: CallEnd): ReceiptEvent[] {
    const call = this.calls.get(toolCallId);
    if (!call || call.settled) return [];
    call.settled = true;
    const { auditReceiptId, ...input } = call.receipt;
    const [outcome, code] = OUTCOMES[end];
    const receipt = {
      ...input,
      phase: "result",
      outcome,
      code,
      retryable: false,
      authorizationBoundary: "grant",
      operationReceiptId: `semantic_receipt:${sha256Hex(`${this.runId}:${input.operationId}:${input.idempotencyKey}`).slice(0, 32)}`,
      auditReceiptId,
    };
    return [
      {
        eventType: "semantic_tool.result",
        payload: { semantic_tool: receipt },
        itemId: (input.correlation as Correlation).itemId,
      },
    ];
  }

  /** The turn ended: every call still open settles as unavailable, or by how it ended when it did. */
  settleAll(ended: (toolCallId: string) => CallEnd): ReceiptEvent[] {
    return [...this.calls.keys()].flatMap((id) => this.settle(id, ended(id)));
  }

  private unstableMessage(toolCallId: string, was: string, now: string): string {
    return `tool call ${cutText(String(JSON.stringify(toolCallId)), 80)} was announced again with a different input (${now}, its receipt has ${was}): unstable semantic receipt identity`;
  }
}

/** The item a call's receipts are on: the run identity's item in durable mode, else the call's own PRP id. */
export const receiptItemId = (toolCallId: string, identityItemId: string | undefined): string =>
  identityItemId ?? projectId("tool", toolCallId);
