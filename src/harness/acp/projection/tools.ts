import { cutText } from "../../../contract/text-cut.js";
import { IdMap } from "../acp-ids.js";
import {
  receiptItemId,
  SemanticReceipts,
  type CallEnd,
  type Correlation,
  type ReceiptEvent,
} from "../semantic-receipts.js";
import { projectToolCall, type ToolState } from "../tool-projection.js";
import type { ProjectionState } from "./state.js";
import { validProviderId, type Obj } from "./wire.js";

/** The tool call a permission request asks about, as the agent described it. */
export interface AskedCall {
  toolCallId: string;
  kind: unknown;
  rawInput: unknown;
}

/**
 * Tool calls and their semantic receipts (seed 002 rule 3): each call's execution events and
 * diffs, the input receipt of a call a permission allowed, and the one result receipt that
 * settles it when it ends or the turn does.
 */
export class ToolCalls {
  private readonly tools = new Map<string, ToolState>();
  private readonly ids = new IdMap();
  /** The last raw input each tool call was announced with: an allowed call's receipt digests it. */
  private readonly rawInputs = new Map<string, unknown>();
  private readonly kinds = new Map<string, unknown>();
  private readonly receipts: SemanticReceipts;

  constructor(runId: string) {
    this.receipts = new SemanticReceipts(runId);
  }

  /** A `tool_call` or `tool_call_update` of the bound turn. */
  update(state: ProjectionState, update: Obj): void {
    const id = update.toolCallId as string;
    if (!validProviderId(id))
      return state.fail(
        `tool call id ${cutText(String(JSON.stringify(id)), 80)} is not a usable identity`,
        "invalid_identity",
      );
    if (!this.announce(state, id, update.rawInput)) return;
    if (typeof update.kind === "string") this.kinds.set(id, update.kind);
    const projected = projectToolCall(update, this.tools, this.ids, state.context.cwd);
    if ("error" in projected) return state.fail(projected.error, "identity_collision");
    // A tool call is one item: its execution and its diffs carry the execution id as item id.
    const tool = this.tools.get(id)!;
    for (const e of projected.events) state.turnEvent(e.eventType, e.payload, tool.payload.executionId as string);
    if (tool.done) this.push(state, this.receipts.settle(id, toolEnd(tool)));
  }

  /** A call announced with its raw input: false after failing closed when its receipt holds another. */
  announce(state: ProjectionState, toolCallId: string, rawInput: unknown): boolean {
    const unstable = this.receipts.check(toolCallId, rawInput);
    if (unstable) {
      state.fail(unstable, "unstable_receipt_identity");
      return false;
    }
    if (rawInput !== undefined) this.rawInputs.set(toolCallId, rawInput);
    return true;
  }

  /** Rule 3: an allowed call is an authorised one; its receipt digests the input it was allowed with. */
  authorise(state: ProjectionState, call: AskedCall, grantId: string): void {
    const rawInput = call.rawInput !== undefined ? call.rawInput : this.rawInputs.get(call.toolCallId);
    const authorised = this.receipts.authorise(
      call.toolCallId,
      call.kind ?? this.kinds.get(call.toolCallId),
      rawInput,
      correlation(state, call.toolCallId),
      grantId,
    );
    if ("unstable" in authorised) return state.fail(authorised.unstable, "unstable_receipt_identity");
    this.push(state, authorised.events);
    // A call that already ended before it was allowed settles at once.
    const tool = this.tools.get(call.toolCallId);
    if (tool?.done) this.push(state, this.receipts.settle(call.toolCallId, toolEnd(tool)));
  }

  /** The turn ended: calls still running end with `status`, and every authorised call settles. */
  close(state: ProjectionState, status: "cancelled" | "interrupted"): void {
    for (const tool of this.tools.values()) {
      if (tool.done) continue;
      tool.done = true;
      state.turnEvent("tool.execution.completed", { ...tool.payload, status }, tool.payload.executionId as string);
    }
    this.settle(state);
  }

  /** Every authorised call still open gets its one result receipt: how it ended, or unavailable. */
  settle(state: ProjectionState): void {
    this.push(
      state,
      this.receipts.settleAll((id) => {
        const tool = this.tools.get(id);
        return tool ? toolEnd(tool) : "turn_ended";
      }),
    );
  }

  private push(state: ProjectionState, events: ReceiptEvent[]): void {
    for (const e of events) state.turnEvent(e.eventType, e.payload, e.itemId);
  }
}

/** The run identity a receipt is correlated to (wire.md §7.4). */
function correlation(state: ProjectionState, toolCallId: string): Correlation {
  const identity = state.context.identity;
  return {
    runId: state.context.runId,
    normalizedSessionId: state.context.sessionId,
    turnId: identity?.turnId ?? state.turnId!,
    itemId: receiptItemId(toolCallId, identity?.itemId),
  };
}

/** How a tool call ended, for its result receipt. */
function toolEnd(tool: ToolState): CallEnd {
  return tool.payload.status === "completed" ? "completed" : tool.payload.status === "failed" ? "failed" : "turn_ended";
}
