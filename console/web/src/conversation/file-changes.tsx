import type { FileChange } from "../api.js";
import "./file-changes.css";

type ChangedFile = FileChange["files"][number];

/** The most diff lines a card shows (the API already keeps only a diff's first 64 KiB). */
export const SHOWN_DIFF_LINES = 2000;
/** The most characters of a path shown: an agent's path is text, and may be long. */
const SHOWN_PATH = 300;

const shortPath = (path: string) => (path.length > SHOWN_PATH ? `${path.slice(0, SHOWN_PATH)}…` : path);

/** Each file once (its latest diff's word on it), in order of first appearance. */
function filesOf(changes: FileChange[]): ChangedFile[] {
  const byPath = new Map<string, ChangedFile>();
  for (const c of changes) for (const f of c.files) byPath.set(f.path, f);
  return [...byPath.values()];
}

/** "3 files changed, +12 −4": the counts only when every file has them. */
export function changeSummary(files: ChangedFile[]): string {
  const head = `${files.length} file${files.length === 1 ? "" : "s"} changed`;
  if (files.some((f) => f.additions === null || f.deletions === null)) return head;
  const sum = (k: "additions" | "deletions") => files.reduce((n, f) => n + (f[k] ?? 0), 0);
  return `${head}, +${sum("additions")} −${sum("deletions")}`;
}

/** A diff line's role, from its first character: the +/− stays in the text, the class adds colour. */
function lineClass(line: string): string {
  if (line.startsWith("+++") || line.startsWith("---")) return "diff-file";
  if (line.startsWith("+")) return "diff-add";
  if (line.startsWith("-")) return "diff-del";
  if (line.startsWith("@@")) return "diff-hunk";
  return "diff-ctx";
}

/** One diff's text as lines, bounded; what was cut is said. */
function DiffText({ change }: { change: FileChange }) {
  const lines = (change.diff ?? "").split("\n");
  if (lines.at(-1) === "") lines.pop();
  const shown = lines.slice(0, SHOWN_DIFF_LINES);
  const cut = change.diffTruncated || lines.length > shown.length;
  return (
    <details class="diff" data-testid="diff">
      <summary>
        Diff{change.diffBytes !== null ? ` (${change.diffBytes} bytes)` : ""}
        {cut ? ", its start only" : ""}
      </summary>
      <pre class="diff-text">
        {shown.map((line, i) => (
          <span key={i} class={`diff-line ${lineClass(line)}`}>
            {line}
            {"\n"}
          </span>
        ))}
      </pre>
      {cut && <p class="muted">The rest of the diff is not shown.</p>}
    </details>
  );
}

/** The files a tool call (or a turn) changed: how many, +/− lines, each file with its kind; and each diff's text the run carried. */
export function FileChanges({ changes }: { changes: FileChange[] }) {
  const files = filesOf(changes);
  if (files.length === 0 && !changes.some((c) => c.diff)) return null;
  return (
    <div class="file-changes" data-testid="file-changes">
      <p class="file-changes-summary">{changeSummary(files)}</p>
      <ul class="changed-files">
        {files.map((f) => (
          <li key={f.path} data-change={f.changeKind}>
            <span class={`change-kind change-${f.changeKind}`}>{f.changeKind}</span>{" "}
            <code class="changed-path">{shortPath(f.path)}</code>
            {f.previousPath !== null && <span class="muted"> (was {shortPath(f.previousPath)})</span>}
            {f.additions !== null && f.deletions !== null && (
              <span class="muted">
                {" "}
                +{f.additions} −{f.deletions}
              </span>
            )}
          </li>
        ))}
      </ul>
      {changes
        .filter((c) => c.diff)
        .map((c) => (
          <DiffText key={c.diffId} change={c} />
        ))}
    </div>
  );
}

/** Files a turn changed outside any tool call: a card of their own at the turn's end. */
export function TurnFileChanges({ changes }: { changes: FileChange[] }) {
  return (
    <li class="card turn-changes" data-testid="turn-file-changes">
      <p class="card-title">Files changed</p>
      <FileChanges changes={changes} />
    </li>
  );
}
