import { PROTOCOL_VERSION } from "@agentclientprotocol/sdk";
import { RUNNER_ID_PATTERN } from "../../contract/ids.js";
import { sha256Digest } from "../../contract/digest.js";
import type { HarnessFact } from "../harness-driver.js";
import { IdMap, projectId } from "./acp-ids.js";
import { permissionChoices, type PermissionOption } from "./permissions.js";
import { formContent, projectForm, type Field } from "./questions.js";
import { redact, redactText } from "../redaction.js";
import { receiptItemId, SemanticReceipts, type CallEnd, type ReceiptEvent } from "./semantic-receipts.js";
import { updateProblem } from "./update-check.js";
import { projectToolCall, type ToolState } from "./tool-projection.js";
import { cutText } from "../../contract/text-cut.js";
import { isPlainObject as isObj } from "../../contract/plain-object.js";

type Obj = Record<string, unknown>;

/** What the projection reads: the ACP wire in order, and what the driver did around it. */
export type AcpInput =
  /** The agent process started (its process group). */
  | { kind: "spawned"; pid: number }
  /** A JSON-RPC message the driver wrote to the agent. */
  | { kind: "sent"; message: unknown }
  /** A parsed JSON line the agent wrote. */
  | { kind: "received"; message: unknown }
  /** A stdout line that is not JSON. */
  | { kind: "unparsable"; text: string }
  /** The runner started a turn: projection is bound to it until it ends (seed 002 rule 1). */
  | { kind: "turn"; turnId: string }
  /** The driver is cancelling the turn, and why (turn.interrupt, or run.cancel / stop). */
  | { kind: "cancelling"; why: "interrupt" | "cancel"; reason: string }
  /** Who answered a permission request or a question the driver is about to answer. */
  | { kind: "decided"; providerRequestId: unknown; by: "controller" | "policy"; policy?: string }
  /** The turn cannot be sent: the session did not start. */
  | { kind: "turn_refused"; message: string }
  /**
   * The agent process is gone; `exit` says how. `restartable`: it was killed by a signal the
   * driver did not send, so the runner may start a replacement that carries the turn on.
   */
  | { kind: "exited"; exit: string; restartable: boolean }
  /** The driver gave up on the agent (a deadline passed, its stdout broke): the run fails closed. */
  | { kind: "broken"; code: ViolationCode; message: string };

/** The run and session one projection is bound to (seed 002 rule 1). */
export interface ProjectionContext {
  runId: string;
  sessionId: string;
  /** The agent's working directory: diff paths are reported relative to it. */
  cwd: string;
  /** Which agent process of the run this is (1, then 2 after a restart): keeps item ids apart. */
  generation?: number;
  /**
   * The run's turn and item in durable mode, where the authority checks that a semantic
   * receipt's correlation is exactly the run identity. Without it (local mode) a receipt is
   * correlated to the bound turn and to the tool call's own PRP id as its item.
   */
  identity?: { turnId: string; itemId: string };
  /**
   * The `forbid` permission policy: the agent must never ask. A permission request or a question
   * that reaches the projection fails the run closed (seed 002 rule 9, as under upstream's
   * pinned Codex policy).
   */
  forbidRequests?: boolean;
}

/** Why the projection failed closed (seed 002 rule 9): the typed reason the run's terminal carries. */
export type ViolationCode =
  | "invalid_identity"
  | "identity_collision"
  | "unstable_receipt_identity"
  | "cross_turn_projection"
  | "request_forbidden"
  | "protocol_error"
  /** initialize answered with an ACP version this client does not speak. */
  | "unsupported_protocol_version"
  /** No answer to initialize, session/new or session/load in time, or nothing at all during a prompt for too long. */
  | "agent_timeout"
  /** The agent closed its stdout but went on running: it can never answer again. */
  | "agent_stdout_closed"
  /** A stdout line grew past the line limit without ending. */
  | "agent_line_too_long";

/** Readable reasons for JSON-RPC errors an agent returns (code → what a person does about it). */
const ERROR_CODES: Record<number, [string, string]> = {
  [-32000]: ["authentication_required", "authentication required: log the agent in"],
  [-32002]: ["resource_not_found", "the agent does not know this resource"],
  [-32600]: ["invalid_request", "the agent refused the request as invalid"],
  [-32601]: ["method_not_found", "the agent does not support this method"],
  [-32602]: ["invalid_params", "the agent refused the request's parameters"],
  [-32603]: ["agent_internal_error", "the agent failed internally"],
};
const STOP_FAILURES: Record<string, string> = {
  max_tokens: "the agent stopped: it reached its token limit",
  max_turn_requests: "the agent stopped: it reached its limit of model requests for one turn",
  refusal: "the agent refused to continue",
};
const MAX_TEXT = 64 * 1024;
const MAX_DIAGNOSTIC = 8 * 1024;

export function describeRpcError(error: unknown): {
  code: string;
  message: string;
  providerError: { code: number | null; message: string };
} {
  const e = isObj(error) ? error : {};
  const code = typeof e.code === "number" ? e.code : null;
  const text = typeof e.message === "string" ? cutText(redactText(e.message).text, 2000) : "no message";
  const known = code !== null ? ERROR_CODES[code] : undefined;
  return {
    code: known?.[0] ?? "agent_error",
    message: known ? `${known[1]} (${text})` : `the agent answered with an error: ${text}`,
    providerError: { code, message: text },
  };
}

interface OpenItem {
  itemId: string;
  kind: "assistant_message" | "reasoning_summary";
  text: string;
}

/** A request the agent is waiting on: a permission (for a tool call) or a question (a form). */
type PendingRequest = { projectedId: string; decidedBy?: { by: string; policy?: string } } & (
  | {
      kind: "permission";
      options: PermissionOption[];
      toolCall: { toolCallId: string; kind: unknown; rawInput: unknown };
    }
  | { kind: "question"; fields: Field[] }
);

/** A provider identity PRP can carry (seed 002 rule 9): a JSON-RPC id is a string or an integer; a string is 1..240 characters without control characters. */
const validProviderId = (id: unknown): boolean =>
  (typeof id === "number" && Number.isSafeInteger(id)) ||
  (typeof id === "string" && id.length > 0 && id.length <= 240 && !/[\u0000-\u001f\u007f]/.test(id));

/**
 * The ACP → PRP projection (runtime.md §11.2, seed 002), pure: ACP messages in the order they
 * crossed the wire in, PRP harness facts out, no I/O and no clock, so the same wire always
 * gives the same events. It is bound to one run and session and to one turn at a time; what
 * it cannot place in that context fails closed (a `violation` fact: the runner stops
 * believing the agent).
 */
export class AcpProjection {
  private pid = 0;
  private readonly sentRequests = new Map<string, { method: string; params: unknown }>();
  private acpSessionId: string | null = null;
  private loading = false;
  private turnId: string | null = null;
  private turnOpen = false;
  private cancelling: { why: "interrupt" | "cancel"; reason: string } | null = null;
  private itemSeq = 0;
  private message: OpenItem | null = null;
  private thought: OpenItem | null = null;
  private finalText = "";
  private readonly tools = new Map<string, ToolState>();
  private readonly toolIds = new IdMap();
  private readonly requestIds = new IdMap();
  private readonly requests = new Map<string, PendingRequest>();
  /** The last raw input each tool call was announced with: an allowed call's receipt digests it. */
  private readonly rawInputs = new Map<string, unknown>();
  private readonly toolKinds = new Map<string, unknown>();
  private readonly receipts: SemanticReceipts;
  private planRevision = 0;
  private failed = false;
  /** Agent capabilities from `initialize`, for the driver (loadSession, session close). */
  capabilities: Obj = {};

  constructor(private readonly context: ProjectionContext) {
    this.receipts = new SemanticReceipts(context.runId);
  }

  /** The ACP session id, once `session/new` or `session/load` answered. */
  get sessionId(): string | null {
    return this.acpSessionId;
  }

  /** The provider's JSON-RPC id of a projected request (rule 5), if it is open. */
  providerRequestId(projectedId: string): unknown {
    const id = this.requestIds.provider(projectedId);
    return id !== undefined && this.requests.has(key(id)) ? id : undefined;
  }

  /** Whether the projection failed closed: nothing the agent says is believed any more. */
  get broken(): boolean {
    return this.failed;
  }

  /** Whether a request of the agent's (by provider id) was projected and waits for an answer. */
  isOpen(providerRequestId: unknown): boolean {
    return this.requests.has(key(providerRequestId));
  }

  /** The options of an open permission request, by provider id. */
  permissionOptions(providerRequestId: unknown): PermissionOption[] | undefined {
    const r = this.requests.get(key(providerRequestId));
    return r?.kind === "permission" ? r.options : undefined;
  }

  /**
   * The ACP answer to an open question (rule 5: the exact provider request): `submit` with a
   * question response (already checked against the question set by the runner) → accept with
   * the content mapped back, decline → decline, cancel → cancel.
   */
  questionAnswer(
    providerRequestId: unknown,
    resolution: Obj,
  ): { action: "accept"; content: Obj } | { action: "decline" | "cancel" } | { error: string } | undefined {
    const r = this.requests.get(key(providerRequestId));
    if (r?.kind !== "question") return undefined;
    if (resolution.action === "decline" || resolution.action === "cancel") return { action: resolution.action };
    if (resolution.action !== "submit" || !isObj(resolution.response))
      return {
        error: `a question is answered with submit (and a response), decline or cancel, not ${JSON.stringify(resolution.action)}`,
      };
    const mapped = formContent(r.fields, resolution.response);
    return "error" in mapped ? mapped : { action: "accept", content: mapped.content };
  }

  project(input: AcpInput): HarnessFact[] {
    if (this.failed) return [];
    const out: HarnessFact[] = [];
    const fail = (message: string, code: ViolationCode) => {
      this.failed = true;
      out.push({ kind: "violation", message, code });
    };
    switch (input.kind) {
      case "spawned":
        this.pid = input.pid;
        break;
      case "turn":
        if (!RUNNER_ID_PATTERN.test(input.turnId))
          fail(`turn id ${JSON.stringify(input.turnId)} is not a valid id`, "invalid_identity");
        else if (this.turnId !== null && this.turnId !== input.turnId)
          fail(
            `projection is bound to turn ${this.turnId}, not ${input.turnId} (cross-turn projection)`,
            "cross_turn_projection",
          );
        else this.turnId = input.turnId;
        break;
      case "cancelling":
        this.cancelling ??= { why: input.why, reason: input.reason };
        break;
      case "decided": {
        const p = this.requests.get(key(input.providerRequestId));
        if (p) p.decidedBy = { by: input.by, ...(input.policy ? { policy: input.policy } : {}) };
        break;
      }
      case "turn_refused":
        if (this.turnId !== null)
          out.push(this.event("turn.failed", { code: "session_not_started", message: input.message }));
        break;
      case "exited":
        // Nobody may answer this process's requests any more: a replacement's own requests get other ids.
        this.cancelRequests(`the agent process that asked it is gone (${input.exit})`, out);
        if (this.turnOpen && !input.restartable) {
          this.turnOpen = false;
          if (this.cancelling) {
            // The driver ended an agent that did not settle its cancelled turn: the turn ends as it was asked to.
            this.flushTurn(false, "cancelled", out);
            const message = `the agent did not end its turn after session/cancel, so it was ended (${input.exit})`;
            out.push(
              this.event(this.cancelling.why === "interrupt" ? "turn.interrupted" : "turn.cancelled", {
                reason: this.cancelling.reason,
                message,
              }),
            );
          } else {
            this.flushTurn(false, "interrupted", out);
            out.push(
              this.event("turn.failed", {
                code: "agent_exited",
                message: `the agent exited in the middle of the turn (${input.exit})`,
              }),
            );
          }
        }
        // A replacement agent carries the turn on without this process's calls: they ended here.
        this.settleReceipts(out);
        break;
      case "broken":
        fail(input.message, input.code);
        break;
      case "unparsable":
        out.push(
          diagnostic(
            "acp_unparsable_line",
            `the agent wrote a stdout line that is not JSON: ${cutText(redactText(input.text).text, 200)}`,
          ),
        );
        break;
      case "sent":
        this.onSent(input.message, out, fail);
        break;
      case "received":
        this.onReceived(input.message, out, fail);
        break;
    }
    return out;
  }

  private onSent(message: unknown, out: HarnessFact[], fail: Fail): void {
    if (!isObj(message)) return;
    if (typeof message.method === "string" && "id" in message) {
      this.sentRequests.set(key(message.id), { method: message.method, params: message.params });
      if (message.method === "session/load") {
        // The history replay that precedes the answer names the session being loaded.
        const loaded = (message.params as Obj | undefined)?.sessionId;
        this.loading = true;
        this.acpSessionId = typeof loaded === "string" ? loaded : null;
        out.push(event("session.resuming", { driverSessionId: this.acpSessionId }));
      } else if (message.method === "session/prompt") {
        if (this.turnId === null) return fail("session/prompt sent before a turn was bound", "cross_turn_projection");
        this.turnOpen = true;
        out.push(this.event("turn.started", {}));
      }
      return;
    }
    if (!("method" in message) && "id" in message) this.onAnswered(message, out, fail);
  }

  /** The driver answered a request of the agent's: the request resolves (or is cancelled), and an allowed tool call gets its input receipt. */
  private onAnswered(response: Obj, out: HarnessFact[], fail: Fail): void {
    const k = key(response.id);
    const p = this.requests.get(k);
    if (!p) return;
    this.requests.delete(k);
    const by = p.decidedBy ?? { by: "controller" };
    const cancelled = (reason: string) =>
      out.push(this.event("runtime_request.cancelled", { requestId: p.projectedId, reason, decidedBy: by }));
    if (!isObj(response.result))
      return void cancelled(`answered with an error: ${describeRpcError(response.error).providerError.message}`);
    if (p.kind === "question") {
      const action = response.result.action;
      if (action === "cancel") return void cancelled("cancelled");
      out.push(
        this.event("runtime_request.resolved", {
          requestId: p.projectedId,
          resolution: { action, ...(isObj(response.result.content) ? { content: response.result.content } : {}) },
          decidedBy: by,
        }),
      );
      return;
    }
    const outcome = isObj(response.result.outcome) ? response.result.outcome : null;
    if (!outcome || outcome.outcome === "cancelled") return void cancelled("cancelled");
    const option = p.options.find((o) => o.optionId === outcome.optionId);
    const allowed = option?.kind.startsWith("allow") === true;
    out.push(
      this.event("runtime_request.resolved", {
        requestId: p.projectedId,
        resolution: { optionId: outcome.optionId, optionKind: option?.kind ?? "unknown", allowed },
        decidedBy: by,
      }),
    );
    if (!allowed) return;
    // Rule 3: an allowed call is an authorised one; its receipt digests the input it was allowed with.
    const call = p.toolCall;
    const rawInput = call.rawInput !== undefined ? call.rawInput : this.rawInputs.get(call.toolCallId);
    const authorised = this.receipts.authorise(
      call.toolCallId,
      call.kind ?? this.toolKinds.get(call.toolCallId),
      rawInput,
      this.correlation(call.toolCallId),
      p.projectedId,
    );
    if ("unstable" in authorised) return fail(authorised.unstable, "unstable_receipt_identity");
    this.pushReceipts(authorised.events, out);
    // A call that already ended before it was allowed settles at once.
    const tool = this.tools.get(call.toolCallId);
    if (tool?.done) this.pushReceipts(this.receipts.settle(call.toolCallId, toolEnd(tool)), out);
  }

  /** The run identity a receipt is correlated to (wire.md §7.4). */
  private correlation(toolCallId: string): {
    runId: string;
    normalizedSessionId: string;
    turnId: string;
    itemId: string;
  } {
    const identity = this.context.identity;
    return {
      runId: this.context.runId,
      normalizedSessionId: this.context.sessionId,
      turnId: identity?.turnId ?? this.turnId!,
      itemId: receiptItemId(toolCallId, identity?.itemId),
    };
  }

  private pushReceipts(events: ReceiptEvent[], out: HarnessFact[]): void {
    for (const e of events) out.push(this.event(e.eventType, e.payload, e.itemId));
  }

  private onReceived(message: unknown, out: HarnessFact[], fail: Fail): void {
    if (!isObj(message) || message.jsonrpc !== "2.0") {
      out.push(
        diagnostic(
          "acp_not_jsonrpc",
          `the agent wrote a line that is not a JSON-RPC 2.0 message: ${cutText(JSON.stringify(redact(message).value), 200)}`,
        ),
      );
      return;
    }
    const method = typeof message.method === "string" ? message.method : null;
    if (method !== null && "id" in message) return this.onRequest(message, method, out, fail);
    if (method !== null) return this.onNotification(method, message.params, out, fail);
    if ("id" in message) return this.onResponse(message, out, fail);
    out.push(diagnostic("acp_not_jsonrpc", "the agent wrote a JSON-RPC message with neither a method nor an id"));
  }

  private onRequest(message: Obj, method: string, out: HarnessFact[], fail: Fail): void {
    if (method !== "session/request_permission" && method !== "elicitation/create") {
      out.push(
        diagnostic(
          "acp_unsupported_request",
          `the agent asked for ${cutText(method, 160)}, which this client does not offer (fs and terminal are off)`,
        ),
      );
      return;
    }
    const params = message.params;
    if (method === "elicitation/create") return this.onElicitation(message, isObj(params) ? params : {}, out, fail);
    const options = isObj(params) && Array.isArray(params.options) ? params.options : null;
    const toolCall = isObj(params) && isObj(params.toolCall) ? params.toolCall : null;
    if (
      !isObj(params) ||
      typeof params.sessionId !== "string" ||
      !toolCall ||
      typeof toolCall.toolCallId !== "string" ||
      !options ||
      !options.every(
        (o) => isObj(o) && typeof o.optionId === "string" && typeof o.name === "string" && typeof o.kind === "string",
      )
    ) {
      out.push(
        diagnostic(
          "acp_request_dropped",
          "the agent sent a session/request_permission the SDK refuses (it needs sessionId, toolCall.toolCallId and options)",
        ),
      );
      return;
    }
    if (!validProviderId(toolCall.toolCallId))
      return fail(
        `permission request for tool call id ${cutText(String(JSON.stringify(toolCall.toolCallId)), 80)}, which is not a usable identity`,
        "invalid_identity",
      );
    const projectedId = this.openRequest(message, params.sessionId, "acp_permission", "permission request", fail);
    if (projectedId === null) return;
    const call = { toolCallId: toolCall.toolCallId, kind: toolCall.kind, rawInput: toolCall.rawInput };
    if (call.rawInput !== undefined) {
      const unstable = this.receipts.check(call.toolCallId, call.rawInput);
      if (unstable) return fail(unstable, "unstable_receipt_identity");
      this.rawInputs.set(call.toolCallId, call.rawInput);
    }
    this.requests.set(key(message.id), {
      kind: "permission",
      projectedId,
      options: options as unknown as PermissionOption[],
      toolCall: call,
    });
    const title =
      typeof toolCall.title === "string" && toolCall.title.trim()
        ? redactText(toolCall.title.trim()).text
        : `a ${typeof toolCall.kind === "string" ? toolCall.kind : "tool"} call`;
    out.push(
      this.event("runtime_request.created", {
        request: {
          schema: "paperclip.runtime_request.v1",
          requestKind: "runtime",
          requestId: projectedId,
          type: "permission",
          status: "pending",
          prompt: cutText(`Allow ${title}?`, 4000),
          choices: permissionChoices(options as unknown as PermissionOption[]),
        },
        providerRequest: { id: message.id, method },
        toolCall: {
          toolCallId: toolCall.toolCallId,
          kind: typeof toolCall.kind === "string" ? toolCall.kind : "other",
        },
      }),
    );
  }

  /** Rule 4: a form elicitation becomes a `paperclip.runtime_request.v2` question set. */
  private onElicitation(message: Obj, params: Obj, out: HarnessFact[], fail: Fail): void {
    if (typeof params.sessionId !== "string") {
      out.push(
        diagnostic(
          "acp_question_unsupported",
          "the agent asked a question outside its session (a request-scoped elicitation); it is cancelled",
        ),
      );
      return;
    }
    const form = projectForm(params);
    if ("error" in form) {
      if (this.context.forbidRequests)
        return fail(
          "the agent asked a question, which the forbid permission policy does not allow",
          "request_forbidden",
        );
      out.push(
        diagnostic(
          "acp_question_unsupported",
          `the agent asked a question PRP cannot put to a person (${form.error}); it is cancelled`,
        ),
      );
      return;
    }
    const projectedId = this.openRequest(message, params.sessionId, "acp_question", "question", fail);
    if (projectedId === null) return;
    this.requests.set(key(message.id), { kind: "question", projectedId, fields: form.fields });
    out.push(
      this.event("runtime_request.created", {
        request: {
          schema: "paperclip.runtime_request.v2",
          requestKind: "runtime",
          requestId: projectedId,
          type: "input",
          status: "pending",
          prompt: form.prompt,
          input: form.questionSet,
          origin: { adapter: "acp", method: "elicitation/create" },
          turnId: this.context.identity?.turnId ?? this.turnId!,
        },
        providerRequest: { id: message.id, method: "elicitation/create" },
        ...(typeof params.toolCallId === "string" ? { toolCall: { toolCallId: params.toolCallId } } : {}),
      }),
    );
  }

  /**
   * The checks every request of the agent's passes before it is projected (rule 9): its id is a
   * usable identity, it names this session, a turn is open, the policy allows asking at all, and
   * its projected id stands for no other provider id. Returns the projected id (rule 5), or null
   * after failing closed.
   */
  private openRequest(message: Obj, sessionId: string, prefix: string, what: string, fail: Fail): string | null {
    const no = (m: string, code: ViolationCode) => (fail(m, code), null);
    if (!validProviderId(message.id))
      return no(
        `${what} id ${cutText(String(JSON.stringify(message.id)), 80)} is not a usable identity`,
        "invalid_identity",
      );
    if (sessionId !== this.acpSessionId)
      return no(
        `${what} for session ${cutText(String(JSON.stringify(sessionId)), 80)}, not ${JSON.stringify(this.acpSessionId)}`,
        "invalid_identity",
      );
    if (!this.turnOpen) return no(`${what} outside a turn (cross-turn projection)`, "cross_turn_projection");
    if (this.context.forbidRequests)
      return no(
        `the agent sent a ${what}, which the forbid permission policy does not allow: the agent must never ask`,
        "request_forbidden",
      );
    // A replacement agent reuses JSON-RPC ids: the generation keeps its requests apart from its predecessor's.
    const projectedId = projectId(prefix, message.id) + this.generationSuffix();
    const collision = this.requestIds.bind(projectedId, message.id);
    if (collision) return no(collision, "identity_collision");
    if (this.requests.has(key(message.id)))
      return no(`request id ${JSON.stringify(message.id)} is already open`, "identity_collision");
    return projectedId;
  }

  private onNotification(method: string, params: unknown, out: HarnessFact[], fail: Fail): void {
    if (method !== "session/update") {
      out.push(
        diagnostic(
          method.startsWith("_") ? "acp_extension_ignored" : "acp_unknown_notification",
          `the agent sent a ${cutText(method, 160)} notification, which this client does not read`,
        ),
      );
      return;
    }
    const problem = updateProblem(params);
    if (problem) {
      out.push(diagnostic("acp_update_dropped", `the agent sent a session/update the SDK drops: ${problem}`));
      return;
    }
    const { sessionId, update } = params as { sessionId: string; update: Obj };
    if (sessionId !== this.acpSessionId)
      return fail(
        `update for session ${JSON.stringify(sessionId)}, not ${JSON.stringify(this.acpSessionId)}`,
        "invalid_identity",
      );
    if (this.loading) return; // session/load replays the history: already reported by the run that lived it
    const kind = update.sessionUpdate as string;
    const sessionWide = [
      "available_commands_update",
      "current_mode_update",
      "config_option_update",
      "session_info_update",
      "usage_update",
    ];
    if (sessionWide.includes(kind)) {
      const { sessionUpdate: _, _meta: __, ...rest } = update;
      out.push(this.event("session.updated", { update: kind, ...boundedJson(rest) }));
      return;
    }
    if (!this.turnOpen) return fail(`${kind} update outside a turn (cross-turn projection)`, "cross_turn_projection");
    switch (kind) {
      case "agent_message_chunk":
        this.message = this.chunk(this.message, "assistant_message", update.content as Obj, out);
        break;
      case "agent_thought_chunk":
        this.thought = this.chunk(this.thought, "reasoning_summary", update.content as Obj, out);
        break;
      case "tool_call":
      case "tool_call_update": {
        const id = update.toolCallId as string;
        if (!validProviderId(id))
          return fail(
            `tool call id ${cutText(String(JSON.stringify(id)), 80)} is not a usable identity`,
            "invalid_identity",
          );
        const unstable = this.receipts.check(id, update.rawInput);
        if (unstable) return fail(unstable, "unstable_receipt_identity");
        if (update.rawInput !== undefined) this.rawInputs.set(id, update.rawInput);
        if (typeof update.kind === "string") this.toolKinds.set(id, update.kind);
        const projected = projectToolCall(update, this.tools, this.toolIds, this.context.cwd);
        if ("error" in projected) return fail(projected.error, "identity_collision");
        // A tool call is one item: its execution and its diffs carry the execution id as item id.
        const tool = this.tools.get(id)!;
        for (const e of projected.events)
          out.push(this.event(e.eventType, e.payload, tool.payload.executionId as string));
        if (tool.done) this.pushReceipts(this.receipts.settle(id, toolEnd(tool)), out);
        break;
      }
      case "plan":
        out.push(this.event("plan.updated", this.plan(update.entries as Obj[])));
        break;
      case "notice":
        out.push(this.event("provider.notice.recorded", notice(update, this.itemSeq + 1)));
        break;
      default:
        break; // user_message_chunk echoes the prompt; compaction is the agent's own bookkeeping
    }
  }

  private onResponse(response: Obj, out: HarnessFact[], fail: Fail): void {
    const request = this.sentRequests.get(key(response.id));
    if (!request) {
      out.push(
        diagnostic(
          "acp_unexpected_response",
          `the agent answered a request that was not sent (id ${JSON.stringify(response.id)})`,
        ),
      );
      return;
    }
    this.sentRequests.delete(key(response.id));
    const result = isObj(response.result) ? response.result : null;
    const error = result ? null : describeRpcError(response.error);
    switch (request.method) {
      case "initialize":
        if (!result) return fail(`the agent refused initialize: ${error!.message}`, "protocol_error");
        if (result.protocolVersion !== PROTOCOL_VERSION) {
          return fail(
            `the agent answered initialize with ACP protocol version ${JSON.stringify(result.protocolVersion)?.slice(0, 40)}; this client speaks only version ${PROTOCOL_VERSION}: use an agent release that speaks it`,
            "unsupported_protocol_version",
          );
        }
        this.capabilities = isObj(result.agentCapabilities) ? result.agentCapabilities : {};
        out.push({ kind: "ready", pid: this.pid, resumePoint: {}, agent: agentInfo(result) });
        return;
      case "session/new":
      case "session/load": {
        const resumed = request.method === "session/load";
        this.loading = false;
        if (!result) {
          out.push(event("session.failed", { ...error!, method: request.method }));
          return;
        }
        const id = resumed ? (request.params as Obj | undefined)?.sessionId : result.sessionId;
        if (typeof id !== "string" || id.length === 0 || id.length > 240 || /[\u0000-\u001f]/.test(id))
          return fail(
            `the agent's session id ${cutText(String(JSON.stringify(id)), 80)} is not a usable identity`,
            "invalid_identity",
          );
        this.acpSessionId = id;
        out.push(event(resumed ? "session.resumed" : "session.started", { driverSessionId: id }));
        if (isObj(result.modes) || Array.isArray(result.configOptions)) {
          out.push(
            event("session.updated", {
              update: "session_opened",
              ...boundedJson({ modes: result.modes ?? null, configOptions: result.configOptions ?? null }),
            }),
          );
        }
        out.push(event("runtime.phase.changed", { phase: "executing" }));
        return;
      }
      case "session/prompt":
        this.endTurn(result, error, out);
        return;
      case "session/close":
        if (result) out.push(event("session.closed", { reason: "turn_ended", driverSessionId: this.acpSessionId }));
        return;
      default:
        return;
    }
  }

  /** The prompt answered: flush open items (the answer on the final channel), then the turn's end. */
  private endTurn(result: Obj | null, error: ReturnType<typeof describeRpcError> | null, out: HarnessFact[]): void {
    if (!this.turnOpen) return;
    this.turnOpen = false;
    this.cancelRequests("the turn ended while the agent was still waiting on it", out);
    const stopReason = result?.stopReason;
    this.flushTurn(!error, stopReason === "cancelled" ? "cancelled" : "interrupted", out);
    if (error) {
      out.push(this.event("turn.failed", error));
    } else if (stopReason === "end_turn") {
      out.push(this.event("turn.completed", { stopReason }));
      out.push({ kind: "result", payload: reviewResult(this.finalText) });
    } else if (stopReason === "cancelled") {
      const why = this.cancelling ?? { why: "interrupt", reason: "agent" };
      out.push(
        this.event(why.why === "interrupt" ? "turn.interrupted" : "turn.cancelled", { reason: why.reason, stopReason }),
      );
    } else {
      const text = typeof stopReason === "string" ? STOP_FAILURES[stopReason] : undefined;
      out.push(
        this.event("turn.failed", {
          code: typeof stopReason === "string" && text ? stopReason : "unknown_stop_reason",
          message:
            text ?? `the agent ended the turn with stop reason ${cutText(String(JSON.stringify(stopReason)), 80)}`,
          stopReason: stopReason ?? null,
        }),
      );
    }
  }

  /**
   * Completes the turn's open items — the assistant message on the `final` channel when the
   * agent answered (seed 002 rule 7) — and ends tool calls still running with `toolStatus`.
   */
  private flushTurn(answered: boolean, toolStatus: "cancelled" | "interrupted", out: HarnessFact[]): void {
    for (const item of [this.thought, this.message]) {
      if (item)
        out.push(
          this.event(
            "item.completed",
            {
              kind: item.kind,
              text: item.text,
              ...(answered && item.kind === "assistant_message" ? { channel: "final" } : {}),
            },
            item.itemId,
          ),
        );
    }
    if (this.message) this.finalText = this.message.text;
    this.message = this.thought = null;
    for (const e of closeOpenTools(this.tools, toolStatus))
      out.push(this.event(e.eventType, e.payload, e.payload.executionId as string));
    this.settleReceipts(out);
  }

  /** Every request still open is cancelled, as an event: none is left pending for a person to answer. */
  private cancelRequests(reason: string, out: HarnessFact[]): void {
    for (const p of this.requests.values())
      out.push(
        this.event("runtime_request.cancelled", { requestId: p.projectedId, reason, decidedBy: { by: "runner" } }),
      );
    this.requests.clear();
  }

  /** Every authorised call still open gets its one result receipt: how it ended, or unavailable. */
  private settleReceipts(out: HarnessFact[]): void {
    this.pushReceipts(
      this.receipts.settleAll((id) => {
        const tool = this.tools.get(id);
        return tool ? toolEnd(tool) : "turn_ended";
      }),
      out,
    );
  }

  private chunk(open: OpenItem | null, kind: OpenItem["kind"], content: Obj, out: HarnessFact[]): OpenItem {
    const text = content.type === "text" ? String(content.text) : `[${cutText(String(content.type), 40)} content]`;
    let item = open;
    if (!item) {
      item = { itemId: `${this.turnId}_item_${++this.itemSeq}${this.generationSuffix()}`, kind, text: "" };
      out.push(this.event("item.started", { kind, text: "" }, item.itemId));
    }
    if (item.text.length < MAX_TEXT) item.text = cutText(item.text + text, MAX_TEXT);
    out.push(this.event("item.delta", { text }, item.itemId));
    return item;
  }

  /** `_r1` on the ids of the first replacement agent's items and requests, `_r2` on the next; none on the first agent's. */
  private generationSuffix(): string {
    const generation = this.context.generation ?? 1;
    return generation > 1 ? `_r${generation - 1}` : "";
  }

  private plan(entries: Obj[]): Obj {
    this.planRevision++;
    const steps = entries.slice(0, 256).map((e, i) => ({
      stepId: `step_${i + 1}`,
      body: cutText(redactText(String(e.content)).text, 4000),
      status: ["pending", "in_progress", "completed"].includes(e.status as string) ? e.status : "pending",
    }));
    return {
      schema: "paperclip.plan.updated.v1",
      planId: `plan_${this.turnId}`.slice(0, 160),
      revision: this.planRevision,
      steps,
      complete: steps.length > 0 && steps.every((s) => s.status === "completed"),
      syncStatus: "not_applicable",
      explanation: null,
      documentRevision: null,
    };
  }

  private event(eventType: string, payload: Obj, itemId?: string): HarnessFact {
    return {
      kind: "event",
      eventType,
      payload,
      ...(this.turnId ? { turnId: this.turnId } : {}),
      ...(itemId ? { itemId } : {}),
    };
  }
}

const key = (id: unknown): string => JSON.stringify(id ?? null);

function event(eventType: string, payload: Obj): HarnessFact {
  return { kind: "event", eventType, payload };
}

function diagnostic(code: string, message: string): HarnessFact {
  return event("harness.diagnostic", { code, message: cutText(message, MAX_DIAGNOSTIC) });
}

/** A structure of the agent's (session-wide update, config options, capabilities): credentials redacted, kept only when it stays small (the event is one frame, not a dump). */
function boundedJson(value: Obj): Obj {
  const safe = redact(value).value as Obj;
  const text = JSON.stringify(safe);
  return text.length <= 16 * 1024 ? safe : { truncated: true, bytes: text.length };
}

function agentInfo(result: Obj): Obj {
  const info = isObj(result.agentInfo) ? result.agentInfo : {};
  const auth = Array.isArray(result.authMethods)
    ? result.authMethods
        .filter(isObj)
        .map((m) => String(m.id ?? m.name ?? ""))
        .filter(Boolean)
    : [];
  return {
    protocol: "acp",
    protocolVersion: result.protocolVersion ?? null,
    name: typeof info.name === "string" ? cutText(info.name, 160) : null,
    version: typeof info.version === "string" ? cutText(info.version, 160) : null,
    ...boundedJson({ capabilities: isObj(result.agentCapabilities) ? result.agentCapabilities : {} }),
    authMethods: auth.slice(0, 32),
  };
}

function notice(update: Obj, seq: number): Obj {
  const severity = ["info", "warning", "error"].includes(update.severity as string) ? update.severity : "info";
  const summary = cutText(
    redactText([update.title, update.description].filter((s) => typeof s === "string" && s).join(": ")).text,
    4000,
  );
  return {
    schema: "paperclip.provider.notice.v1",
    noticeId: `notice_${sha256Digest(summary).slice(7, 23)}_${seq}`,
    severity,
    category: "acp_notice",
    scope: "session",
    recoverable: severity !== "error",
    userActionable: severity === "error",
    summary,
  };
}

function closeOpenTools(
  tools: Map<string, ToolState>,
  status: "cancelled" | "interrupted",
): Array<{ eventType: string; payload: Obj }> {
  const out: Array<{ eventType: string; payload: Obj }> = [];
  for (const tool of tools.values()) {
    if (tool.done) continue;
    tool.done = true;
    out.push({ eventType: "tool.execution.completed", payload: { ...tool.payload, status } });
  }
  return out;
}

/**
 * Seed 002 rule 6 for ACP: only the reserved finish/block semantic operations may propose a run
 * result, and ACP has none, so an agent's `end_turn` is not a claim that the work is done. The
 * runner proposes the result itself, always `needs_review`: the agent's final answer as the
 * summary, the objective not claimed satisfied. Nothing the agent writes — its text, a tool
 * call named like a finish operation, metadata — reaches the disposition.
 */
function reviewResult(finalText: string): Obj {
  return {
    schema: "paperclip.run_result.v1",
    reportedWorkDisposition: "needs_review",
    summary: cutText(finalText.trim() || "The agent ended its turn without a message.", 12_000),
    completionClaim: { contractRevision: "acp_turn", objectiveSatisfied: false, criteria: [], remainingWork: [] },
    evidence: [],
    verification: [],
    attentionRequests: [
      {
        kind: "review",
        summary: "An ACP agent ended its turn; ACP has no finish operation, so a person reviews the work.",
        ownerClass: "human",
      },
    ],
    artifacts: [],
  };
}

type Fail = (message: string, code: ViolationCode) => void;

/** How a tool call ended, for its result receipt. */
function toolEnd(tool: ToolState): CallEnd {
  return tool.payload.status === "completed" ? "completed" : tool.payload.status === "failed" ? "failed" : "turn_ended";
}
