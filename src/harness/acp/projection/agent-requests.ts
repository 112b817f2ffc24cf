import { cutText } from "../../../contract/text-cut.js";
import { redactText } from "../../redaction.js";
import { permissionChoices, type PermissionOption } from "../permissions.js";
import { projectForm } from "../questions.js";
import type { OpenRequests } from "./requests.js";
import type { ProjectionState } from "./state.js";
import type { ToolCalls } from "./tools.js";
import { isObj, validProviderId, type Obj } from "./wire.js";

/** A `session/request_permission` for a tool call becomes a `paperclip.runtime_request.v1` permission request. */
export function askPermission(state: ProjectionState, requests: OpenRequests, tools: ToolCalls, message: Obj): void {
  const params = message.params;
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
    return state.diagnostic(
      "acp_request_dropped",
      "the agent sent a session/request_permission the SDK refuses (it needs sessionId, toolCall.toolCallId and options)",
    );
  }
  if (!validProviderId(toolCall.toolCallId))
    return state.fail(
      `permission request for tool call id ${cutText(String(JSON.stringify(toolCall.toolCallId)), 80)}, which is not a usable identity`,
      "invalid_identity",
    );
  const projectedId = requests.admit(state, message, params.sessionId, "acp_permission", "permission request");
  if (projectedId === null) return;
  const call = { toolCallId: toolCall.toolCallId, kind: toolCall.kind, rawInput: toolCall.rawInput };
  if (!tools.announce(state, call.toolCallId, call.rawInput)) return;
  const permissionOptions = options as unknown as PermissionOption[];
  requests.add(message.id, { kind: "permission", projectedId, options: permissionOptions, toolCall: call });
  const title =
    typeof toolCall.title === "string" && toolCall.title.trim()
      ? redactText(toolCall.title.trim()).text
      : `a ${typeof toolCall.kind === "string" ? toolCall.kind : "tool"} call`;
  state.turnEvent("runtime_request.created", {
    request: {
      schema: "paperclip.runtime_request.v1",
      requestKind: "runtime",
      requestId: projectedId,
      type: "permission",
      status: "pending",
      prompt: cutText(`Allow ${title}?`, 4000),
      choices: permissionChoices(permissionOptions),
    },
    providerRequest: { id: message.id, method: "session/request_permission" },
    toolCall: {
      toolCallId: toolCall.toolCallId,
      kind: typeof toolCall.kind === "string" ? toolCall.kind : "other",
    },
  });
}

/** Rule 4: a form elicitation becomes a `paperclip.runtime_request.v2` question set. */
export function askQuestion(state: ProjectionState, requests: OpenRequests, message: Obj): void {
  const params = isObj(message.params) ? message.params : {};
  if (typeof params.sessionId !== "string") {
    return state.diagnostic(
      "acp_question_unsupported",
      "the agent asked a question outside its session (a request-scoped elicitation); it is cancelled",
    );
  }
  const form = projectForm(params);
  if ("error" in form) {
    if (state.context.forbidRequests)
      return state.fail(
        "the agent asked a question, which the forbid permission policy does not allow",
        "request_forbidden",
      );
    return state.diagnostic(
      "acp_question_unsupported",
      `the agent asked a question PRP cannot put to a person (${form.error}); it is cancelled`,
    );
  }
  const projectedId = requests.admit(state, message, params.sessionId, "acp_question", "question");
  if (projectedId === null) return;
  requests.add(message.id, { kind: "question", projectedId, fields: form.fields });
  state.turnEvent("runtime_request.created", {
    request: {
      schema: "paperclip.runtime_request.v2",
      requestKind: "runtime",
      requestId: projectedId,
      type: "input",
      status: "pending",
      prompt: form.prompt,
      input: form.questionSet,
      origin: { adapter: "acp", method: "elicitation/create" },
      turnId: state.context.identity?.turnId ?? state.turnId!,
    },
    providerRequest: { id: message.id, method: "elicitation/create" },
    ...(typeof params.toolCallId === "string" ? { toolCall: { toolCallId: params.toolCallId } } : {}),
  });
}
