import { relative, isAbsolute } from "node:path/posix";
import { sha256Digest } from "../../contract/digest.js";
import { IdMap, projectId } from "./acp-ids.js";
import { redactText } from "../redaction.js";
import { cutText } from "../../contract/text-cut.js";
import { isPlainObject } from "../../contract/plain-object.js";

type Obj = Record<string, unknown>;

export interface ToolState {
  /** The current `paperclip.tool.execution.v1` payload. */
  payload: Obj;
  done: boolean;
  diffs: number;
}

/** ACP tool kinds → PRP operations (the table; what PRP has no word for is `unknown`). */
const OPERATION: Record<string, string> = {
  read: "read",
  search: "search",
  fetch: "read",
  execute: "execute",
  edit: "edit",
  delete: "edit",
  move: "edit",
};
const STATUS: Record<string, string> = {
  pending: "running",
  in_progress: "running",
  completed: "completed",
  failed: "failed",
};
const MAX_OUTPUT = 65_536;

type ToolEvent = { eventType: string; payload: Obj };

/**
 * A `tool_call` or `tool_call_update` as PRP events: tool.execution.started / .progressed /
 * .completed (a `paperclip.tool.execution.v1` snapshot each time), and a
 * workspace.change.updated for each diff it carries. Pure; `tools` and `ids` are the
 * projection's state. A tool call id that projects onto another's PRP id fails closed.
 */
export function projectToolCall(
  update: Obj,
  tools: Map<string, ToolState>,
  ids: IdMap,
  cwd: string,
): { events: ToolEvent[] } | { error: string } {
  const toolCallId = update.toolCallId as string;
  const executionId = projectId("tool", toolCallId);
  const collision = ids.bind(executionId, toolCallId);
  if (collision) return { error: collision };
  const events: ToolEvent[] = [];
  let tool = tools.get(toolCallId);
  const fresh = tool === undefined;
  if (!tool) {
    tool = {
      payload: {
        schema: "paperclip.tool.execution.v1",
        executionId,
        transport: "builtin",
        operation: "unknown",
        status: "running",
        output: null,
        outputBytes: 0,
        outputTruncated: false,
        outputDigest: null,
        name: null,
      },
      done: false,
      diffs: 0,
    };
    tools.set(toolCallId, tool);
  } else if (update.sessionUpdate === "tool_call") {
    return { error: `tool call ${cutText(String(JSON.stringify(toolCallId)), 80)} was started twice` };
  }
  if (tool.done) return { events: [] }; // a late update to a finished call changes nothing PRP reported
  const p = tool.payload;
  if (typeof update.kind === "string") p.operation = OPERATION[update.kind] ?? "unknown";
  if (typeof update.title === "string") p.name = cutText(redactText(update.title).text, 4000);
  if (typeof update.status === "string") p.status = STATUS[update.status] ?? "running";
  const text = outputText(update.content);
  if (text !== null) {
    const bytes = Buffer.byteLength(text);
    Object.assign(p, {
      output: cutText(text, MAX_OUTPUT),
      outputBytes: bytes,
      outputTruncated: text.length > MAX_OUTPUT,
      outputDigest: sha256Digest(text),
    });
  }
  const target = firstLocation(update.locations, cwd);
  if (target !== undefined) p.target = target;
  const finished = p.status === "completed" || p.status === "failed";
  events.push({
    eventType: fresh ? "tool.execution.started" : finished ? "tool.execution.completed" : "tool.execution.progressed",
    payload: { ...p },
  });
  if (fresh && finished) events.push({ eventType: "tool.execution.completed", payload: { ...p } });
  tool.done = finished;
  for (const diff of Array.isArray(update.content)
    ? update.content.filter(
        (c) => isPlainObject(c) && c.type === "diff" && typeof c.path === "string" && typeof c.newText === "string",
      )
    : []) {
    events.push({
      eventType: "workspace.change.updated",
      payload: diffPayload(diff as Obj, `${executionId}_diff_${++tool.diffs}`, cwd),
    });
  }
  return { events };
}

/** The call's text output, credential-shaped parts redacted: the event carries, counts and digests what a reader may see. */
function outputText(content: unknown): string | null {
  if (!Array.isArray(content)) return null;
  const texts = content
    .filter((c) => isPlainObject(c) && c.type === "content" && isPlainObject(c.content) && c.content.type === "text")
    .map((c) => String(((c as Obj).content as Obj).text));
  return texts.length > 0 ? redactText(texts.join("\n")).text : null;
}

/** A path relative to the agent's cwd, or null when it lies outside it (PRP paths are relative). */
export function workspacePath(path: string, cwd: string): string | null {
  const rel = isAbsolute(path) ? relative(cwd, path) : path;
  return rel && !rel.split("/").includes("..") && !isAbsolute(rel) && rel.length <= 4096 ? rel : null;
}

function firstLocation(locations: unknown, cwd: string): string | null | undefined {
  if (
    !Array.isArray(locations) ||
    locations.length === 0 ||
    !isPlainObject(locations[0]) ||
    typeof locations[0].path !== "string"
  )
    return undefined;
  return workspacePath(locations[0].path, cwd);
}

function lineCount(text: string): number {
  return text === "" ? 0 : text.split("\n").length;
}

function diffPayload(diff: Obj, diffId: string, cwd: string): Obj {
  const path = workspacePath(String(diff.path), cwd);
  const oldText = typeof diff.oldText === "string" ? diff.oldText : null;
  const newText = String(diff.newText);
  // ACP gives whole texts, not hunks: the counts are the lines of each side, an upper bound.
  const files =
    path === null
      ? []
      : [
          {
            path,
            changeKind: oldText === null ? "added" : "modified",
            previousPath: null,
            additions: lineCount(newText),
            deletions: oldText === null ? 0 : lineCount(oldText),
          },
        ];
  return { schema: "paperclip.workspace.diff.v1", diffId: diffId.slice(0, 160), complete: false, files, body: null };
}
