import type { PrpEvent } from "../contract/kinds.js";
import { cutText } from "../contract/text-cut.js";

export type ChangeKind = "added" | "modified" | "deleted" | "renamed";

/** One file a diff names, as workspace.change.updated / workspace.diff.recorded said it. */
export interface ChangedFile {
  path: string;
  changeKind: ChangeKind;
  previousPath: string | null;
  additions: number | null;
  deletions: number | null;
}

/**
 * One workspace diff of the run (the latest event of its diffId): the files it names, the tool
 * execution it belongs to (its envelope's itemId; null for a turn-level change), and the start of
 * its text when the run carried the body (output.body.chunk after the diff).
 */
export interface FileChangeFacts {
  diffId: string;
  itemId: string | null;
  turnId: string | null;
  complete: boolean;
  files: ChangedFile[];
  /** The first DIFF_TEXT characters of the diff's body, as its chunks arrived; null without a body. */
  diff: string | null;
  /** The body's whole length in bytes, as its reference says; null without a body. */
  diffBytes: number | null;
  /** Whether `diff` is less than the whole body (cut here, or not all of it arrived). */
  diffTruncated: boolean;
}

/** A diff as the fold keeps it: with the id of its body, which its chunks name. */
export interface FileChangeEntry extends FileChangeFacts {
  bodyId: string | null;
}

/** The diffs a run keeps (the last ones), the files each keeps, and the diff text each keeps (its start). */
export const KEEP_DIFFS = 50;
export const KEEP_FILES = 200;
export const DIFF_TEXT = 65_536;

const KINDS = new Set<string>(["added", "modified", "deleted", "renamed"]);

const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const stringOr = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);
const count = (value: unknown): number | null =>
  typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : null;

function changedFile(value: unknown): ChangedFile | null {
  const f = record(value);
  const path = stringOr(f.path);
  if (path === null) return null;
  return {
    path: cutText(path, 4096),
    changeKind: KINDS.has(String(f.changeKind)) ? (f.changeKind as ChangeKind) : "modified",
    previousPath: stringOr(f.previousPath) === null ? null : cutText(f.previousPath as string, 4096),
    additions: count(f.additions),
    deletions: count(f.deletions),
  };
}

/** The body reference's id and length, or null (a diff without its text). */
function bodyOf(value: unknown): { bodyId: string; bytes: number | null } | null {
  const b = record(value);
  const bodyId = stringOr(b.bodyId);
  if (bodyId === null) return null;
  const bytes = Number(b.byteLength);
  return { bodyId, bytes: Number.isSafeInteger(bytes) && bytes >= 0 ? bytes : null };
}

/**
 * Folds a workspace diff event or a body chunk into `changes`, copy-safe: each event replaces its
 * entry (never changes an entry, array or object in place), so copying the list is a copy.
 */
export function foldFileChange(changes: FileChangeEntry[], e: PrpEvent, p: Record<string, unknown>): void {
  if (e.eventType === "workspace.change.updated" || e.eventType === "workspace.diff.recorded") foldDiff(changes, e, p);
  else if (e.eventType === "output.body.chunk") foldChunk(changes, p);
}

function foldDiff(changes: FileChangeEntry[], e: PrpEvent, p: Record<string, unknown>) {
  const diffId = stringOr(p.diffId);
  if (diffId === null) return;
  const files = (Array.isArray(p.files) ? p.files : [])
    .slice(0, KEEP_FILES)
    .map(changedFile)
    .filter((f): f is ChangedFile => f !== null);
  const body = bodyOf(p.body);
  const at = changes.findIndex((c) => c.diffId === diffId);
  const was = at === -1 ? undefined : changes[at];
  // A later event of the same diff with the same body keeps the text its chunks brought.
  const kept = was !== undefined && body !== null && was.bodyId === body.bodyId ? was : undefined;
  const next: FileChangeEntry = {
    diffId,
    // The tool execution's id, as the reducer keys its items (run-facts' itemKey).
    itemId: stringOr((e as { providerItemId?: unknown }).providerItemId) ?? stringOr(e.itemId) ?? was?.itemId ?? null,
    turnId: stringOr(e.turnId) ?? was?.turnId ?? null,
    complete: p.complete === true,
    files,
    diff: kept ? kept.diff : body === null ? null : "",
    diffBytes: body?.bytes ?? null,
    diffTruncated: kept ? kept.diffTruncated : body !== null && body.bytes !== 0,
    bodyId: body?.bodyId ?? null,
  };
  if (at !== -1) changes[at] = next;
  else {
    changes.push(next);
    if (changes.length > KEEP_DIFFS) changes.shift();
  }
}

/**
 * A chunk of a kept diff's body (chunks that come before their diff are not kept): its text is
 * appended while the diff's text is under DIFF_TEXT characters.
 */
function foldChunk(changes: FileChangeEntry[], p: Record<string, unknown>) {
  const bodyId = bodyOf(p.body)?.bodyId;
  const at = bodyId === undefined ? -1 : changes.findIndex((c) => c.bodyId === bodyId);
  const change = changes[at];
  if (!change || change.diff === null || typeof p.text !== "string" || change.diff.length >= DIFF_TEXT) return;
  const whole = change.diff + p.text;
  const diff = cutText(whole, DIFF_TEXT);
  const bytes = change.diffBytes;
  changes[at] = {
    ...change,
    diff,
    diffTruncated: diff.length < whole.length || (bytes !== null && Buffer.byteLength(diff) < bytes),
  };
}
