import { cutText } from "../../../contract/text-cut.js";
import { IdMap, projectId } from "../acp-ids.js";
import type { PermissionOption } from "../permissions.js";
import { formContent, type Field } from "../questions.js";
import { describeRpcError } from "./rpc.js";
import type { ProjectionState } from "./state.js";
import type { AskedCall } from "./tools.js";
import type { ViolationCode } from "./types.js";
import { isObj, key, validProviderId, type Obj } from "./wire.js";

/** A request the agent is waiting on: a permission (for a tool call) or a question (a form). */
export type PendingRequest = { projectedId: string; decidedBy?: { by: string; policy?: string } } & (
  { kind: "permission"; options: PermissionOption[]; toolCall: AskedCall } | { kind: "question"; fields: Field[] }
);

/** An allowed permission: the call it authorises and the request that granted it. */
export interface Grant {
  toolCall: AskedCall;
  projectedId: string;
}

/**
 * The agent's open requests, permissions and questions, by provider id (rule 5: each has one
 * projected id): who decided them, how the driver answered them, and their cancellation when
 * nobody can answer them any more.
 */
export class OpenRequests {
  private readonly ids = new IdMap();
  private readonly pending = new Map<string, PendingRequest>();

  /** The provider's JSON-RPC id of a projected request, if it is open. */
  providerRequestId(projectedId: string): unknown {
    const id = this.ids.provider(projectedId);
    return id !== undefined && this.pending.has(key(id)) ? id : undefined;
  }

  isOpen(providerRequestId: unknown): boolean {
    return this.pending.has(key(providerRequestId));
  }

  permissionOptions(providerRequestId: unknown): PermissionOption[] | undefined {
    const r = this.pending.get(key(providerRequestId));
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
    const r = this.pending.get(key(providerRequestId));
    if (r?.kind !== "question") return undefined;
    if (resolution.action === "decline" || resolution.action === "cancel") return { action: resolution.action };
    if (resolution.action !== "submit" || !isObj(resolution.response))
      return {
        error: `a question is answered with submit (and a response), decline or cancel, not ${JSON.stringify(resolution.action)}`,
      };
    const mapped = formContent(r.fields, resolution.response);
    return "error" in mapped ? mapped : { action: "accept", content: mapped.content };
  }

  decided(providerRequestId: unknown, by: string, policy?: string): void {
    const p = this.pending.get(key(providerRequestId));
    if (p) p.decidedBy = { by, ...(policy ? { policy } : {}) };
  }

  /**
   * The checks every request of the agent's passes before it is projected (rule 9): its id is a
   * usable identity, it names this session, a turn is open, the policy allows asking at all, and
   * its projected id stands for no other provider id. Returns the projected id (rule 5), or null
   * after failing closed.
   */
  admit(state: ProjectionState, message: Obj, sessionId: string, prefix: string, what: string): string | null {
    const no = (m: string, code: ViolationCode) => (state.fail(m, code), null);
    if (!validProviderId(message.id))
      return no(
        `${what} id ${cutText(String(JSON.stringify(message.id)), 80)} is not a usable identity`,
        "invalid_identity",
      );
    if (sessionId !== state.acpSessionId)
      return no(
        `${what} for session ${cutText(String(JSON.stringify(sessionId)), 80)}, not ${JSON.stringify(state.acpSessionId)}`,
        "invalid_identity",
      );
    if (!state.turnOpen) return no(`${what} outside a turn (cross-turn projection)`, "cross_turn_projection");
    if (state.context.forbidRequests)
      return no(
        `the agent sent a ${what}, which the forbid permission policy does not allow: the agent must never ask`,
        "request_forbidden",
      );
    // A replacement agent reuses JSON-RPC ids: the generation keeps its requests apart from its predecessor's.
    const projectedId = projectId(prefix, message.id) + state.generationSuffix();
    const collision = this.ids.bind(projectedId, message.id);
    if (collision) return no(collision, "identity_collision");
    if (this.pending.has(key(message.id)))
      return no(`request id ${JSON.stringify(message.id)} is already open`, "identity_collision");
    return projectedId;
  }

  /** An admitted request, open until the driver answers it or it is cancelled. */
  add(providerRequestId: unknown, request: PendingRequest): void {
    this.pending.set(key(providerRequestId), request);
  }

  /** Every request still open is cancelled, as an event: none is left pending for a person to answer. */
  cancelAll(state: ProjectionState, reason: string): void {
    for (const p of this.pending.values())
      state.turnEvent("runtime_request.cancelled", { requestId: p.projectedId, reason, decidedBy: { by: "runner" } });
    this.pending.clear();
  }

  /** The driver answered a request of the agent's: it resolves (or is cancelled); an allowed permission is a grant. */
  answered(state: ProjectionState, response: Obj): Grant | undefined {
    const k = key(response.id);
    const p = this.pending.get(k);
    if (!p) return undefined;
    this.pending.delete(k);
    const by = p.decidedBy ?? { by: "controller" };
    const cancelled = (reason: string) =>
      state.turnEvent("runtime_request.cancelled", { requestId: p.projectedId, reason, decidedBy: by });
    if (!isObj(response.result))
      return void cancelled(`answered with an error: ${describeRpcError(response.error).providerError.message}`);
    if (p.kind === "question") {
      const action = response.result.action;
      if (action === "cancel") return void cancelled("cancelled");
      state.turnEvent("runtime_request.resolved", {
        requestId: p.projectedId,
        resolution: { action, ...(isObj(response.result.content) ? { content: response.result.content } : {}) },
        decidedBy: by,
      });
      return undefined;
    }
    const outcome = isObj(response.result.outcome) ? response.result.outcome : null;
    if (!outcome || outcome.outcome === "cancelled") return void cancelled("cancelled");
    const option = p.options.find((o) => o.optionId === outcome.optionId);
    const allowed = option?.kind.startsWith("allow") === true;
    state.turnEvent("runtime_request.resolved", {
      requestId: p.projectedId,
      resolution: { optionId: outcome.optionId, optionKind: option?.kind ?? "unknown", allowed },
      decidedBy: by,
    });
    return allowed ? { toolCall: p.toolCall, projectedId: p.projectedId } : undefined;
  }
}
