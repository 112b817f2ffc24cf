import { cutText } from "../../contract/text-cut.js";
import { isPlainObject } from "../../contract/plain-object.js";

/**
 * Which `session/update` notifications the ACP SDK accepts (runtime.md §11.1 admission, for ACP).
 * The SDK validates each notification and silently drops one it refuses: no handler sees it.
 * The driver reads the raw stream, so it checks here what the SDK checks and reports each
 * refused update as a diagnostic instead of losing it. `acp-update-check.test` holds this list
 * against the SDK itself: every sample it refuses, the SDK drops; every sample it accepts, the
 * SDK delivers.
 */
export const UPDATE_KINDS = new Set([
  "user_message_chunk",
  "agent_message_chunk",
  "agent_thought_chunk",
  "tool_call",
  "tool_call_update",
  "plan",
  "available_commands_update",
  "current_mode_update",
  "config_option_update",
  "session_info_update",
  "usage_update",
  "notice",
  "compaction_update",
  "compaction_summary_chunk",
]);

type Obj = Record<string, unknown>;
const str = (o: Obj, key: string) => typeof o[key] === "string";
const optStr = (o: Obj, key: string) => o[key] === undefined || o[key] === null || typeof o[key] === "string";
const arr = (o: Obj, key: string) => Array.isArray(o[key]);
const optArr = (o: Obj, key: string) => o[key] === undefined || o[key] === null || Array.isArray(o[key]);

function contentProblem(content: unknown): string | null {
  if (!isPlainObject(content) || typeof content.type !== "string") return "content must be a content block with a type";
  if (content.type === "text" && !str(content, "text")) return "a text content block needs text";
  return null;
}

/** Why the SDK would drop this `session/update` params, or null when it delivers it. */
export function updateProblem(params: unknown): string | null {
  if (!isPlainObject(params) || !str(params, "sessionId")) return "params need a sessionId";
  const u = params.update;
  if (!isPlainObject(u) || !str(u, "sessionUpdate")) return "params need an update with a sessionUpdate kind";
  const kind = u.sessionUpdate as string;
  if (!UPDATE_KINDS.has(kind)) return `unknown sessionUpdate kind ${cutText(String(JSON.stringify(kind)), 80)}`;
  switch (kind) {
    case "user_message_chunk":
    case "agent_message_chunk":
    case "agent_thought_chunk":
    case "compaction_summary_chunk":
      return contentProblem(u.content);
    case "tool_call":
      if (!str(u, "toolCallId")) return "tool_call needs a toolCallId";
      if (!str(u, "title")) return "tool_call needs a title";
      return optArr(u, "locations") ? null : "tool_call locations must be an array";
    case "tool_call_update":
      if (!str(u, "toolCallId")) return "tool_call_update needs a toolCallId";
      return optStr(u, "title") ? null : "tool_call_update title must be a string";
    case "plan": {
      if (!arr(u, "entries")) return "plan needs entries";
      const bad = (u.entries as unknown[]).findIndex(
        (e) => !isPlainObject(e) || !str(e, "content") || !str(e, "priority") || !str(e, "status"),
      );
      return bad >= 0 ? `plan entries[${bad}] needs content, priority and status` : null;
    }
    case "available_commands_update":
      return arr(u, "availableCommands") ? null : "available_commands_update needs availableCommands";
    case "current_mode_update":
      return str(u, "currentModeId") ? null : "current_mode_update needs currentModeId";
    case "config_option_update":
      return arr(u, "configOptions") ? null : "config_option_update needs configOptions";
    case "usage_update":
      return typeof u.used === "number" && typeof u.size === "number"
        ? null
        : "usage_update needs numeric used and size";
    case "notice":
      return str(u, "severity") && str(u, "title") ? null : "notice needs severity and title";
    case "compaction_update":
      return str(u, "compactionId") && str(u, "status") ? null : "compaction_update needs compactionId and status";
    default:
      return null; // session_info_update: every field is optional
  }
}
