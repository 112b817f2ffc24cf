import type { FileChange } from "../api.js";
import { BoundedText } from "./bounded-text.js";
import { FileChanges } from "./file-changes.js";

type Tool = Record<string, unknown>;
const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);

/** What a tool call's status means to a person. */
const STATUS_WORDS: Record<string, string> = {
  running: "running",
  completed: "done",
  failed: "failed",
};

/**
 * One tool call (the reducer's merged tool.execution.* payloads): what it did and on what, its
 * status, the end of its output, and the files it changed (with the diffs the run carried).
 */
export function ToolCallCard({ tool, changes = [] }: { tool: Tool; changes?: FileChange[] }) {
  const status = str(tool.status) ?? "running";
  const title = str(tool.name) ?? str(tool.operation) ?? "tool call";
  const target = str(tool.target);
  const output = str(tool.output);
  const bytes = typeof tool.outputBytes === "number" ? tool.outputBytes : null;
  const exitCode = typeof tool.exitCode === "number" ? tool.exitCode : null;
  return (
    <li class={`card tool tool-${status}`} data-testid="tool-call" data-status={status}>
      <p class="card-title">
        <span class="tool-op">{str(tool.operation) ?? "tool"}</span> {title}{" "}
        <span class={`state state-${status}`}>{STATUS_WORDS[status] ?? status}</span>
      </p>
      {target && (
        <p class="muted">
          on <code data-testid="tool-target">{target}</code>
        </p>
      )}
      {exitCode !== null && <p class="muted">exit code {exitCode}</p>}
      {output && (
        <details open={status === "failed"}>
          <summary>
            Output
            {bytes !== null ? ` (${bytes} bytes${tool.outputTruncated === true ? ", cut by the harness" : ""})` : ""}
          </summary>
          <BoundedText text={output} testId="tool-output" />
        </details>
      )}
      <FileChanges changes={changes} />
    </li>
  );
}
