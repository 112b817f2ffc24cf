import { PROTOCOL_VERSION } from "@agentclientprotocol/sdk";
import { RUNNER_ID_PATTERN } from "../../../contract/ids.js";
import { visible } from "../../../contract/terminal-text.js";
import { cutText } from "../../../contract/text-cut.js";
import { redact } from "../../redaction.js";
import { updateProblem } from "../update-check.js";
import type { RpcError, SentRequest } from "./rpc.js";
import type { ProjectionState } from "./state.js";
import { isObj, type Obj } from "./wire.js";

/** Updates about the session as a whole, not a turn: reported whenever they come. */
const SESSION_WIDE = new Set([
  "available_commands_update",
  "current_mode_update",
  "config_option_update",
  "session_info_update",
  "usage_update",
]);

/** Why the driver is cancelling the turn: turn.interrupt, or run.cancel / stop. */
export type Cancelling = { why: "interrupt" | "cancel"; reason: string };

/**
 * The session and turn binding (seed 002 rule 1): the agent process and its `initialize`, the
 * ACP session the driver opened or loaded, the runner's turn and the prompt that opens it, and
 * which session updates belong to that turn.
 */
export class SessionBinding {
  private pid = 0;
  /** session/load is replaying the session's history. */
  private loading = false;
  /** Agent capabilities from `initialize`, for the driver (loadSession, session close). */
  capabilities: Obj = {};
  /** `initialize` was answered (whatever it said). */
  initializeAnswered = false;
  /** The raw answer to session/new or session/load (the SDK strips what it does not know, such as `models`). */
  openedWith: Obj | null = null;
  cancelling: Cancelling | null = null;

  spawned(pid: number): void {
    this.pid = pid;
  }

  bindTurn(state: ProjectionState, turnId: string): void {
    if (!RUNNER_ID_PATTERN.test(turnId))
      state.fail(`turn id ${JSON.stringify(turnId)} is not a valid id`, "invalid_identity");
    else if (state.turnId !== null && state.turnId !== turnId)
      state.fail(
        `projection is bound to turn ${state.turnId}, not ${turnId} (cross-turn projection)`,
        "cross_turn_projection",
      );
    else state.turnId = turnId;
  }

  cancel(cancelling: Cancelling): void {
    this.cancelling ??= cancelling;
  }

  /** A request the driver sent: session/load names the session it loads, session/prompt opens the bound turn. */
  sent(state: ProjectionState, { method, params }: SentRequest): void {
    if (method === "session/load") {
      // The history replay that precedes the answer names the session being loaded.
      const loaded = (params as Obj | undefined)?.sessionId;
      this.loading = true;
      state.acpSessionId = typeof loaded === "string" ? loaded : null;
      state.sessionEvent("session.resuming", { driverSessionId: state.acpSessionId });
    } else if (method === "session/prompt") {
      if (state.turnId === null)
        return state.fail("session/prompt sent before a turn was bound", "cross_turn_projection");
      state.turnOpen = true;
      if (!state.awaitingFollowUp) return state.turnEvent("turn.started", {});
      // A queued follow-up's prompt: the same turn goes on.
      state.awaitingFollowUp = false;
      state.followUps--;
    }
  }

  /** The agent answered `initialize`, `session/new`, `session/load` or `session/close`. */
  answered(state: ProjectionState, request: SentRequest, result: Obj | null, error: RpcError | null): void {
    switch (request.method) {
      case "initialize":
        this.initializeAnswered = true;
        if (!result) return state.fail(`the agent refused initialize: ${error!.message}`, "protocol_error");
        if (result.protocolVersion !== PROTOCOL_VERSION) {
          return state.startFailed(
            "unsupported_protocol_version",
            `the agent answered initialize with ACP protocol version ${visible(cutText(String(JSON.stringify(result.protocolVersion)), 40))}; this client speaks only version ${PROTOCOL_VERSION}: use an agent release that speaks it`,
          );
        }
        this.capabilities = isObj(result.agentCapabilities) ? result.agentCapabilities : {};
        state.emit({ kind: "ready", pid: this.pid, resumePoint: {}, agent: agentInfo(result) });
        return;
      case "session/new":
      case "session/load":
        return this.opened(state, request, result, error);
      case "session/close":
        if (result) state.sessionEvent("session.closed", { reason: "turn_ended", driverSessionId: state.acpSessionId });
        return;
      // The driver picked the run's model or its policy's mode: what it picked is the session's now.
      case "session/set_mode":
      case "session/set_model": {
        if (!result) return;
        const params = (request.params ?? {}) as Obj;
        state.sessionEvent(
          "session.updated",
          request.method === "session/set_mode"
            ? { update: "current_mode_update", currentModeId: params.modeId, selectedBy: "runner" }
            : { update: "current_model_update", currentModelId: params.modelId, selectedBy: "runner" },
        );
        return;
      }
      default:
        return;
    }
  }

  private opened(state: ProjectionState, request: SentRequest, result: Obj | null, error: RpcError | null): void {
    const resumed = request.method === "session/load";
    this.loading = false;
    if (!result) return state.sessionEvent("session.failed", { ...error!, method: request.method });
    const id = resumed ? (request.params as Obj | undefined)?.sessionId : result.sessionId;
    if (typeof id !== "string" || id.length === 0 || id.length > 240 || /[\u0000-\u001f]/.test(id))
      return state.fail(
        `the agent's session id ${cutText(String(JSON.stringify(id)), 80)} is not a usable identity`,
        "invalid_identity",
      );
    state.acpSessionId = id;
    this.openedWith = result;
    state.sessionEvent(resumed ? "session.resumed" : "session.started", { driverSessionId: id });
    if (isObj(result.modes) || Array.isArray(result.configOptions)) {
      state.sessionEvent("session.updated", {
        update: "session_opened",
        ...boundedJson({ modes: result.modes ?? null, configOptions: result.configOptions ?? null }),
      });
    }
    state.sessionEvent("runtime.phase.changed", { phase: "executing" });
  }

  /**
   * A `session/update` the bound turn is to read, or null when it is not for the turn: dropped
   * (the SDK would drop it), for another session (fails closed), history that session/load
   * replays, an update about the whole session (reported here), or outside the turn (fails closed).
   */
  turnUpdate(state: ProjectionState, params: unknown): Obj | null {
    const problem = updateProblem(params);
    if (problem) {
      state.diagnostic("acp_update_dropped", `the agent sent a session/update the SDK drops: ${problem}`);
      return null;
    }
    const { sessionId, update } = params as { sessionId: string; update: Obj };
    if (sessionId !== state.acpSessionId) {
      state.fail(
        `update for session ${JSON.stringify(sessionId)}, not ${JSON.stringify(state.acpSessionId)}`,
        "invalid_identity",
      );
      return null;
    }
    if (this.loading) return null; // session/load replays the history: already reported by the run that lived it
    const kind = update.sessionUpdate as string;
    if (SESSION_WIDE.has(kind)) {
      const { sessionUpdate: _, _meta: __, ...rest } = update;
      state.turnEvent("session.updated", { update: kind, ...boundedJson(rest) });
      return null;
    }
    if (!state.turnOpen) {
      state.fail(`${kind} update outside a turn (cross-turn projection)`, "cross_turn_projection");
      return null;
    }
    return update;
  }
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
