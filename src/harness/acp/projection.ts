import { RUNNER_ID_PATTERN } from "../../contract/ids.js";
import { sha256Digest } from "../../contract/digest.js";
import type { HarnessFact } from "../harness-driver.js";
import { IdMap, projectId } from "./acp-ids.js";
import { permissionChoices, type PermissionOption } from "./permissions.js";
import { updateProblem } from "./update-check.js";
import { projectToolCall, type ToolState } from "./tool-projection.js";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

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
  /** Who answered a permission request the driver is about to answer. */
  | { kind: "decided"; providerRequestId: unknown; by: "controller" | "policy"; policy?: string }
  /** The turn cannot be sent: the session did not start. */
  | { kind: "turn_refused"; message: string }
  /**
   * The agent process is gone; `exit` says how. `restartable`: it was killed by a signal the
   * driver did not send, so the runner may start a replacement that carries the turn on.
   */
  | { kind: "exited"; exit: string; restartable: boolean };

/** The run and session one projection is bound to (seed 002 rule 1). */
export interface ProjectionContext {
  runId: string;
  sessionId: string;
  /** The agent's working directory: diff paths are reported relative to it. */
  cwd: string;
  /** Which agent process of the run this is (1, then 2 after a restart): keeps item ids apart. */
  generation?: number;
}

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

export function describeRpcError(error: unknown): { code: string; message: string; providerError: { code: number | null; message: string } } {
  const e = isObj(error) ? error : {};
  const code = typeof e.code === "number" ? e.code : null;
  const text = typeof e.message === "string" ? e.message.slice(0, 2000) : "no message";
  const known = code !== null ? ERROR_CODES[code] : undefined;
  return { code: known?.[0] ?? "agent_error", message: known ? `${known[1]} (${text})` : `the agent answered with an error: ${text}`, providerError: { code, message: text } };
}

interface OpenItem {
  itemId: string;
  kind: "assistant_message" | "reasoning_summary";
  text: string;
}

interface PendingPermission {
  projectedId: string;
  options: PermissionOption[];
  decidedBy?: { by: string; policy?: string };
}

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
  private readonly permissions = new Map<string, PendingPermission>();
  private planRevision = 0;
  private failed = false;
  /** Agent capabilities from `initialize`, for the driver (loadSession, session close). */
  capabilities: Obj = {};

  constructor(private readonly context: ProjectionContext) {}

  /** The ACP session id, once `session/new` or `session/load` answered. */
  get sessionId(): string | null {
    return this.acpSessionId;
  }

  /** The provider's JSON-RPC id of a projected permission request (rule 5), if it is open. */
  providerRequestId(projectedId: string): unknown {
    const id = this.requestIds.provider(projectedId);
    return id !== undefined && this.permissions.has(key(id)) ? id : undefined;
  }

  /** The options of an open permission request, by provider id. */
  permissionOptions(providerRequestId: unknown): PermissionOption[] | undefined {
    return this.permissions.get(key(providerRequestId))?.options;
  }

  /** Open permission requests, by provider id: answered `cancelled` when the turn is cancelled. */
  openPermissions(): unknown[] {
    return [...this.permissions.keys()].map((k) => JSON.parse(k));
  }

  project(input: AcpInput): HarnessFact[] {
    if (this.failed) return [];
    const out: HarnessFact[] = [];
    const fail = (message: string) => {
      this.failed = true;
      out.push({ kind: "violation", message });
    };
    switch (input.kind) {
      case "spawned":
        this.pid = input.pid;
        break;
      case "turn":
        if (!RUNNER_ID_PATTERN.test(input.turnId)) fail(`turn id ${JSON.stringify(input.turnId)} is not a valid id`);
        else if (this.turnId !== null && this.turnId !== input.turnId) fail(`projection is bound to turn ${this.turnId}, not ${input.turnId} (cross-turn projection)`);
        else this.turnId = input.turnId;
        break;
      case "cancelling":
        this.cancelling ??= { why: input.why, reason: input.reason };
        break;
      case "decided": {
        const p = this.permissions.get(key(input.providerRequestId));
        if (p) p.decidedBy = { by: input.by, ...(input.policy ? { policy: input.policy } : {}) };
        break;
      }
      case "turn_refused":
        if (this.turnId !== null) out.push(this.event("turn.failed", { code: "session_not_started", message: input.message }));
        break;
      case "exited":
        if (this.turnOpen && !input.restartable) {
          this.turnOpen = false;
          this.flushTurn(false, "interrupted", out);
          out.push(this.event("turn.failed", { code: "agent_exited", message: `the agent exited in the middle of the turn (${input.exit})` }));
        }
        this.permissions.clear();
        break;
      case "unparsable":
        out.push(diagnostic("acp_unparsable_line", `the agent wrote a stdout line that is not JSON: ${input.text.slice(0, 200)}`));
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

  private onSent(message: unknown, out: HarnessFact[], fail: (m: string) => void): void {
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
        if (this.turnId === null) return fail("session/prompt sent before a turn was bound");
        this.turnOpen = true;
        out.push(this.event("turn.started", {}));
      }
      return;
    }
    if (!("method" in message) && "id" in message) this.onPermissionAnswered(message, out);
  }

  private onPermissionAnswered(response: Obj, out: HarnessFact[]): void {
    const k = key(response.id);
    const p = this.permissions.get(k);
    if (!p) return;
    this.permissions.delete(k);
    const by = p.decidedBy ?? { by: "controller" };
    const outcome = isObj(response.result) && isObj(response.result.outcome) ? response.result.outcome : null;
    if (!outcome || outcome.outcome === "cancelled") {
      const reason = outcome ? "cancelled" : `answered with an error: ${describeRpcError(response.error).providerError.message}`;
      out.push(this.event("runtime_request.cancelled", { requestId: p.projectedId, reason, decidedBy: by }));
      return;
    }
    const option = p.options.find((o) => o.optionId === outcome.optionId);
    out.push(this.event("runtime_request.resolved", {
      requestId: p.projectedId,
      resolution: { optionId: outcome.optionId, optionKind: option?.kind ?? "unknown", allowed: option?.kind.startsWith("allow") === true },
      decidedBy: by,
    }));
  }

  private onReceived(message: unknown, out: HarnessFact[], fail: (m: string) => void): void {
    if (!isObj(message) || message.jsonrpc !== "2.0") {
      out.push(diagnostic("acp_not_jsonrpc", `the agent wrote a line that is not a JSON-RPC 2.0 message: ${JSON.stringify(message).slice(0, 200)}`));
      return;
    }
    const method = typeof message.method === "string" ? message.method : null;
    if (method !== null && "id" in message) return this.onRequest(message, method, out, fail);
    if (method !== null) return this.onNotification(method, message.params, out, fail);
    if ("id" in message) return this.onResponse(message, out, fail);
    out.push(diagnostic("acp_not_jsonrpc", "the agent wrote a JSON-RPC message with neither a method nor an id"));
  }

  private onRequest(message: Obj, method: string, out: HarnessFact[], fail: (m: string) => void): void {
    if (method !== "session/request_permission") {
      out.push(diagnostic("acp_unsupported_request", `the agent asked for ${method.slice(0, 160)}, which this client does not offer (fs and terminal are off)`));
      return;
    }
    const params = message.params;
    const options = isObj(params) && Array.isArray(params.options) ? params.options : null;
    const toolCall = isObj(params) && isObj(params.toolCall) ? params.toolCall : null;
    if (!isObj(params) || typeof params.sessionId !== "string" || !toolCall || typeof toolCall.toolCallId !== "string" || !options ||
        !options.every((o) => isObj(o) && typeof o.optionId === "string" && typeof o.name === "string" && typeof o.kind === "string")) {
      out.push(diagnostic("acp_request_dropped", "the agent sent a session/request_permission the SDK refuses (it needs sessionId, toolCall.toolCallId and options)"));
      return;
    }
    if (params.sessionId !== this.acpSessionId) return fail(`permission request for session ${JSON.stringify(params.sessionId)}, not ${JSON.stringify(this.acpSessionId)}`);
    if (!this.turnOpen) return fail("permission request outside a turn (cross-turn projection)");
    const projectedId = projectId("acp_permission", message.id);
    const collision = this.requestIds.bind(projectedId, message.id);
    if (collision) return fail(collision);
    if (this.permissions.has(key(message.id))) return fail(`permission request id ${JSON.stringify(message.id)} is already open`);
    this.permissions.set(key(message.id), { projectedId, options: options as unknown as PermissionOption[] });
    const title = typeof toolCall.title === "string" && toolCall.title.trim() ? toolCall.title.trim() : `a ${typeof toolCall.kind === "string" ? toolCall.kind : "tool"} call`;
    out.push(this.event("runtime_request.created", {
      request: {
        schema: "paperclip.runtime_request.v1", requestKind: "runtime", requestId: projectedId, type: "permission", status: "pending",
        prompt: `Allow ${title}?`.slice(0, 4000), choices: permissionChoices(options as unknown as PermissionOption[]),
      },
      providerRequest: { id: message.id, method },
      toolCall: { toolCallId: toolCall.toolCallId, kind: typeof toolCall.kind === "string" ? toolCall.kind : "other" },
    }));
  }

  private onNotification(method: string, params: unknown, out: HarnessFact[], fail: (m: string) => void): void {
    if (method !== "session/update") {
      out.push(diagnostic(method.startsWith("_") ? "acp_extension_ignored" : "acp_unknown_notification", `the agent sent a ${method.slice(0, 160)} notification, which this client does not read`));
      return;
    }
    const problem = updateProblem(params);
    if (problem) {
      out.push(diagnostic("acp_update_dropped", `the agent sent a session/update the SDK drops: ${problem}`));
      return;
    }
    const { sessionId, update } = params as { sessionId: string; update: Obj };
    if (sessionId !== this.acpSessionId) return fail(`update for session ${JSON.stringify(sessionId)}, not ${JSON.stringify(this.acpSessionId)}`);
    if (this.loading) return; // session/load replays the history: already reported by the run that lived it
    const kind = update.sessionUpdate as string;
    const sessionWide = ["available_commands_update", "current_mode_update", "config_option_update", "session_info_update", "usage_update"];
    if (sessionWide.includes(kind)) {
      const { sessionUpdate: _, _meta: __, ...rest } = update;
      out.push(this.event("session.updated", { update: kind, ...boundedJson(rest) }));
      return;
    }
    if (!this.turnOpen) return fail(`${kind} update outside a turn (cross-turn projection)`);
    switch (kind) {
      case "agent_message_chunk":
        this.message = this.chunk(this.message, "assistant_message", update.content as Obj, out);
        break;
      case "agent_thought_chunk":
        this.thought = this.chunk(this.thought, "reasoning_summary", update.content as Obj, out);
        break;
      case "tool_call":
      case "tool_call_update": {
        const projected = projectToolCall(update, this.tools, this.toolIds, this.context.cwd);
        if ("error" in projected) return fail(projected.error);
        // A tool call is one item: its execution and its diffs carry the execution id as item id.
        const itemId = this.tools.get(update.toolCallId as string)!.payload.executionId as string;
        for (const e of projected.events) out.push(this.event(e.eventType, e.payload, itemId));
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

  private onResponse(response: Obj, out: HarnessFact[], fail: (m: string) => void): void {
    const request = this.sentRequests.get(key(response.id));
    if (!request) {
      out.push(diagnostic("acp_unexpected_response", `the agent answered a request that was not sent (id ${JSON.stringify(response.id)})`));
      return;
    }
    this.sentRequests.delete(key(response.id));
    const result = isObj(response.result) ? response.result : null;
    const error = result ? null : describeRpcError(response.error);
    switch (request.method) {
      case "initialize":
        if (!result) return fail(`the agent refused initialize: ${error!.message}`);
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
        if (typeof id !== "string" || id.length === 0 || id.length > 240 || /[\u0000-\u001f]/.test(id)) return fail(`the agent's session id ${JSON.stringify(id)?.slice(0, 80)} is not a usable identity`);
        this.acpSessionId = id;
        out.push(event(resumed ? "session.resumed" : "session.started", { driverSessionId: id }));
        if (isObj(result.modes) || Array.isArray(result.configOptions)) {
          out.push(event("session.updated", { update: "session_opened", ...boundedJson({ modes: result.modes ?? null, configOptions: result.configOptions ?? null }) }));
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
    const stopReason = result?.stopReason;
    this.flushTurn(!error, stopReason === "cancelled" ? "cancelled" : "interrupted", out);
    if (error) {
      out.push(this.event("turn.failed", error));
    } else if (stopReason === "end_turn") {
      out.push(this.event("turn.completed", { stopReason }));
      out.push({ kind: "result", payload: completedResult(this.finalText) });
    } else if (stopReason === "cancelled") {
      const why = this.cancelling ?? { why: "interrupt", reason: "agent" };
      out.push(this.event(why.why === "interrupt" ? "turn.interrupted" : "turn.cancelled", { reason: why.reason, stopReason }));
    } else {
      const text = typeof stopReason === "string" ? STOP_FAILURES[stopReason] : undefined;
      out.push(this.event("turn.failed", { code: typeof stopReason === "string" && text ? stopReason : "unknown_stop_reason", message: text ?? `the agent ended the turn with stop reason ${JSON.stringify(stopReason)?.slice(0, 80)}`, stopReason: stopReason ?? null }));
    }
  }

  /**
   * Completes the turn's open items — the assistant message on the `final` channel when the
   * agent answered (seed 002 rule 7) — and ends tool calls still running with `toolStatus`.
   */
  private flushTurn(answered: boolean, toolStatus: "cancelled" | "interrupted", out: HarnessFact[]): void {
    for (const item of [this.thought, this.message]) {
      if (item) out.push(this.event("item.completed", { kind: item.kind, text: item.text, ...(answered && item.kind === "assistant_message" ? { channel: "final" } : {}) }, item.itemId));
    }
    if (this.message) this.finalText = this.message.text;
    this.message = this.thought = null;
    for (const e of closeOpenTools(this.tools, toolStatus)) out.push(this.event(e.eventType, e.payload, e.payload.executionId as string));
  }

  private chunk(open: OpenItem | null, kind: OpenItem["kind"], content: Obj, out: HarnessFact[]): OpenItem {
    const text = content.type === "text" ? String(content.text) : `[${String(content.type).slice(0, 40)} content]`;
    let item = open;
    if (!item) {
      const generation = this.context.generation ?? 1;
      item = { itemId: `${this.turnId}_item_${++this.itemSeq}${generation > 1 ? `_r${generation - 1}` : ""}`, kind, text: "" };
      out.push(this.event("item.started", { kind, text: "" }, item.itemId));
    }
    if (item.text.length < MAX_TEXT) item.text = (item.text + text).slice(0, MAX_TEXT);
    out.push(this.event("item.delta", { text }, item.itemId));
    return item;
  }

  private plan(entries: Obj[]): Obj {
    this.planRevision++;
    const steps = entries.slice(0, 256).map((e, i) => ({
      stepId: `step_${i + 1}`, body: String(e.content).slice(0, 4000),
      status: ["pending", "in_progress", "completed"].includes(e.status as string) ? e.status : "pending",
    }));
    return {
      schema: "paperclip.plan.updated.v1", planId: `plan_${this.turnId}`.slice(0, 160), revision: this.planRevision, steps,
      complete: steps.length > 0 && steps.every((s) => s.status === "completed"), syncStatus: "not_applicable", explanation: null, documentRevision: null,
    };
  }

  private event(eventType: string, payload: Obj, itemId?: string): HarnessFact {
    return { kind: "event", eventType, payload, ...(this.turnId ? { turnId: this.turnId } : {}), ...(itemId ? { itemId } : {}) };
  }
}

const key = (id: unknown): string => JSON.stringify(id ?? null);

function event(eventType: string, payload: Obj): HarnessFact {
  return { kind: "event", eventType, payload };
}

function diagnostic(code: string, message: string): HarnessFact {
  return event("harness.diagnostic", { code, message: message.slice(0, MAX_DIAGNOSTIC) });
}

/** A session-wide update, kept only when it stays small (the event is one frame, not a dump). */
function boundedJson(value: Obj): Obj {
  const text = JSON.stringify(value);
  return text.length <= 16 * 1024 ? value : { truncated: true, bytes: text.length };
}

function agentInfo(result: Obj): Obj {
  const info = isObj(result.agentInfo) ? result.agentInfo : {};
  const auth = Array.isArray(result.authMethods) ? result.authMethods.filter(isObj).map((m) => String(m.id ?? m.name ?? "")).filter(Boolean) : [];
  return {
    protocol: "acp", protocolVersion: result.protocolVersion ?? null,
    name: typeof info.name === "string" ? info.name.slice(0, 160) : null, version: typeof info.version === "string" ? info.version.slice(0, 160) : null,
    ...boundedJson({ capabilities: isObj(result.agentCapabilities) ? result.agentCapabilities : {} }), authMethods: auth.slice(0, 32),
  };
}

function notice(update: Obj, seq: number): Obj {
  const severity = ["info", "warning", "error"].includes(update.severity as string) ? update.severity : "info";
  const summary = [update.title, update.description].filter((s) => typeof s === "string" && s).join(": ").slice(0, 4000);
  return {
    schema: "paperclip.provider.notice.v1", noticeId: `notice_${sha256Digest(summary).slice(7, 23)}_${seq}`, severity, category: "acp_notice", scope: "session",
    recoverable: severity !== "error", userActionable: severity === "error", summary,
  };
}

function closeOpenTools(tools: Map<string, ToolState>, status: "cancelled" | "interrupted"): Array<{ eventType: string; payload: Obj }> {
  const out: Array<{ eventType: string; payload: Obj }> = [];
  for (const tool of tools.values()) {
    if (tool.done) continue;
    tool.done = true;
    out.push({ eventType: "tool.execution.completed", payload: { ...tool.payload, status } });
  }
  return out;
}

/** A finished turn's result: the agent's final answer as its summary (runtime.md §8.2). */
function completedResult(finalText: string): Obj {
  return {
    schema: "paperclip.run_result.v1", reportedWorkDisposition: "done",
    summary: (finalText.trim() || "The agent ended its turn without a message.").slice(0, 12_000),
    completionClaim: { contractRevision: "acp_turn", objectiveSatisfied: true, criteria: [], remainingWork: [] },
    evidence: [], verification: [], attentionRequests: [], artifacts: [],
  };
}
