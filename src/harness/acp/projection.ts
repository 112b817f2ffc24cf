import { cutText } from "../../contract/text-cut.js";
import type { HarnessFact } from "../harness-driver.js";
import { redact, redactText } from "../redaction.js";
import type { PermissionOption } from "./permissions.js";
import { askPermission, askQuestion } from "./projection/agent-requests.js";
import { MessageItems } from "./projection/items.js";
import { notice } from "./projection/notice.js";
import { Plans } from "./projection/plans.js";
import { OpenRequests } from "./projection/requests.js";
import { describeRpcError, RpcCorrelation } from "./projection/rpc.js";
import { SessionBinding } from "./projection/session.js";
import { ProjectionState } from "./projection/state.js";
import { ToolCalls } from "./projection/tools.js";
import {
  agentExited,
  dropFollowUps,
  followUpCancelled,
  promptAnswered,
  type TurnParts,
} from "./projection/turn-end.js";
import type { AcpInput, ProjectionContext } from "./projection/types.js";
import { isObj, type Obj } from "./projection/wire.js";

export type { AcpInput, ProjectionContext, ViolationCode } from "./projection/types.js";

/**
 * The ACP → PRP projection (runtime.md §11.2, seed 002), pure: ACP messages in the order they
 * crossed the wire in, PRP harness facts out, no I/O and no clock, so the same wire always
 * gives the same events. It is bound to one run and session and to one turn at a time; what
 * it cannot place in that context fails closed (a `violation` fact: the runner stops
 * believing the agent). This class only routes: each input goes to the part that owns it
 * (`projection/`), with the state they share.
 */
export class AcpProjection {
  private readonly state: ProjectionState;
  private readonly rpc = new RpcCorrelation();
  private readonly plans = new Plans();
  private readonly parts: TurnParts;

  constructor(context: ProjectionContext) {
    this.state = new ProjectionState(context);
    this.parts = {
      session: new SessionBinding(),
      requests: new OpenRequests(),
      items: new MessageItems(),
      tools: new ToolCalls(context.runId),
    };
  }

  /** Agent capabilities from `initialize`, for the driver (loadSession, session close). */
  get capabilities(): Obj {
    return this.parts.session.capabilities;
  }

  /** Whether the agent answered `initialize` (an agent that ends first could not start). */
  get initializeAnswered(): boolean {
    return this.parts.session.initializeAnswered;
  }

  /** The raw answer that opened the session (session/new or session/load), once there is one. */
  get opened(): Obj | null {
    return this.parts.session.openedWith;
  }

  /** The ACP session id, once `session/new` or `session/load` answered. */
  get sessionId(): string | null {
    return this.state.acpSessionId;
  }

  /** The last prompt was answered and the turn waits for a queued follow-up's prompt. */
  get awaitingFollowUp(): boolean {
    return this.state.awaitingFollowUp;
  }

  /** Whether the projection failed closed: nothing the agent says is believed any more. */
  get broken(): boolean {
    return this.state.failed;
  }

  /** The provider's JSON-RPC id of a projected request (rule 5), if it is open. */
  providerRequestId(projectedId: string): unknown {
    return this.parts.requests.providerRequestId(projectedId);
  }

  /** Whether a request of the agent's (by provider id) was projected and waits for an answer. */
  isOpen(providerRequestId: unknown): boolean {
    return this.parts.requests.isOpen(providerRequestId);
  }

  /** The options of an open permission request, by provider id. */
  permissionOptions(providerRequestId: unknown): PermissionOption[] | undefined {
    return this.parts.requests.permissionOptions(providerRequestId);
  }

  /** The ACP answer to an open question, by provider id (`OpenRequests.questionAnswer`). */
  questionAnswer(providerRequestId: unknown, resolution: Obj): ReturnType<OpenRequests["questionAnswer"]> {
    return this.parts.requests.questionAnswer(providerRequestId, resolution);
  }

  project(input: AcpInput): HarnessFact[] {
    const { state, parts } = this;
    if (state.failed) return [];
    switch (input.kind) {
      case "spawned":
        parts.session.spawned(input.pid);
        break;
      case "turn":
        parts.session.bindTurn(state, input.turnId);
        break;
      case "follow_up":
        state.followUps++;
        break;
      case "cancelling":
        parts.session.cancel({ why: input.why, reason: input.reason });
        followUpCancelled(state, parts);
        break;
      case "decided":
        parts.requests.decided(input.providerRequestId, input.by, input.policy);
        break;
      case "turn_refused":
        dropFollowUps(state, "the turn was refused");
        if (state.turnId !== null)
          state.turnEvent("turn.failed", { code: "session_not_started", message: input.message });
        break;
      case "exited":
        agentExited(state, parts, input.exit, input.restartable);
        break;
      case "broken":
        state.fail(input.message, input.code);
        break;
      case "unparsable":
        state.diagnostic(
          "acp_unparsable_line",
          `the agent wrote a stdout line that is not JSON: ${cutText(redactText(input.text).text, 200)}`,
        );
        break;
      case "sent":
        this.onSent(input.message);
        break;
      case "received":
        this.onReceived(input.message);
        break;
    }
    return state.take();
  }

  /** The driver's request opens an RPC (and perhaps the session or turn); its answer to the agent's request settles that. */
  private onSent(message: unknown): void {
    if (!isObj(message) || !("id" in message)) return;
    if (typeof message.method === "string") {
      const request = { method: message.method, params: message.params };
      this.rpc.sent(message.id, request);
      this.parts.session.sent(this.state, request);
    } else if (!("method" in message)) {
      const grant = this.parts.requests.answered(this.state, message);
      if (grant) this.parts.tools.authorise(this.state, grant.toolCall, grant.projectedId);
    }
  }

  private onReceived(message: unknown): void {
    const { state, parts } = this;
    if (!isObj(message) || message.jsonrpc !== "2.0")
      return state.diagnostic(
        "acp_not_jsonrpc",
        `the agent wrote a line that is not a JSON-RPC 2.0 message: ${cutText(JSON.stringify(redact(message).value), 200)}`,
      );
    const method = typeof message.method === "string" ? message.method : null;
    if (method === "session/request_permission" && "id" in message)
      return askPermission(state, parts.requests, parts.tools, message);
    if (method === "elicitation/create" && "id" in message) return askQuestion(state, parts.requests, message);
    if (method !== null && "id" in message)
      return state.diagnostic(
        "acp_unsupported_request",
        `the agent asked for ${cutText(method, 160)}, which this client does not offer (fs and terminal are off)`,
      );
    if (method === "session/update") return this.onUpdate(message.params);
    if (method !== null)
      return state.diagnostic(
        method.startsWith("_") ? "acp_extension_ignored" : "acp_unknown_notification",
        `the agent sent a ${cutText(method, 160)} notification, which this client does not read`,
      );
    if ("id" in message) return this.onResponse(message);
    state.diagnostic("acp_not_jsonrpc", "the agent wrote a JSON-RPC message with neither a method nor an id");
  }

  private onUpdate(params: unknown): void {
    const { state, parts } = this;
    const update = parts.session.turnUpdate(state, params);
    switch (update?.sessionUpdate) {
      case "agent_message_chunk":
        return parts.items.chunk(state, "assistant_message", update.content as Obj);
      case "agent_thought_chunk":
        return parts.items.chunk(state, "reasoning_summary", update.content as Obj);
      case "tool_call":
      case "tool_call_update":
        return parts.tools.update(state, update);
      case "plan":
        return this.plans.update(state, update.entries as Obj[]);
      case "notice":
        return state.turnEvent("provider.notice.recorded", notice(update, parts.items.count + 1));
      default:
        return; // user_message_chunk echoes the prompt; compaction is the agent's own bookkeeping
    }
  }

  private onResponse(response: Obj): void {
    const request = this.rpc.answered(response.id);
    if (!request)
      return this.state.diagnostic(
        "acp_unexpected_response",
        `the agent answered a request that was not sent (id ${JSON.stringify(response.id)})`,
      );
    const result = isObj(response.result) ? response.result : null;
    const error = result ? null : describeRpcError(response.error);
    if (request.method === "session/prompt") promptAnswered(this.state, this.parts, result, error);
    else this.parts.session.answered(this.state, request, result, error);
  }
}
