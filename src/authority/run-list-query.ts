import { fail, ok, type Result } from "./errors.js";
import { runSpecFrom, type Row } from "./store-rows.js";
import type { RunListEntry, RunListPage, RunQuery, RunState } from "./store.js";

/** The most runs one page may hold. */
export const MAX_RUN_PAGE = 500;

/**
 * The run list's one query, for both databases (they differ only in how a parameter is
 * written): newest first by creation time, then run id, so that a cursor is a position in a
 * total order and a page never repeats or skips a run created meanwhile.
 */
export function runListQuery(query: RunQuery, param: (n: number) => string): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  // One value per placeholder, even for a value used twice: SQLite's `?` are positional.
  // One value per placeholder, even for a value used twice: SQLite's `?` are positional.
  const p = (value: unknown) => {
    values.push(value);
    return param(values.length);
  };
  const where: string[] = [];
  const terminal =
    "EXISTS (SELECT 1 FROM committed_events e WHERE e.run_id = r.run_id AND e.event_type = 'run.terminal')";
  if (query.state === "pending") where.push("r.acked_source_seq = 0");
  if (query.state === "running") where.push(`r.acked_source_seq > 0 AND NOT ${terminal}`);
  if (query.state === "ended") where.push(terminal);
  for (const [key, value] of Object.entries(query.labels ?? {}))
    where.push(
      `EXISTS (SELECT 1 FROM run_labels l WHERE l.run_id = r.run_id AND l.key = ${p(key)} AND l.value = ${p(value)})`,
    );
  if (query.text !== undefined && query.text !== "") {
    const like = `%${query.text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    where.push(
      `(lower(r.run_id) LIKE ${p(like)} ESCAPE '\\' OR lower(COALESCE(s.spec, '')) LIKE ${p(like)} ESCAPE '\\')`,
    );
  }
  if (query.after !== undefined) {
    const [createdAt, runId] = decodeCursor(query.after) as [number, string];
    where.push(`(r.created_at < ${p(createdAt)} OR (r.created_at = ${p(createdAt)} AND r.run_id < ${p(runId)}))`);
  }
  const text = `SELECT r.run_id, r.protocol_version, r.acked_source_seq, r.created_at, ${terminal} AS ended,
      s.spec, s.spec_digest, s.labels, s.priority, s.created_by, s.created_at AS spec_created_at
    FROM runs r LEFT JOIN run_specs s ON s.run_id = r.run_id
    ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
    ORDER BY r.created_at DESC, r.run_id DESC
    LIMIT ${p(query.limit + 1)}`;
  return { text, values };
}

/** A query's own problems, before any SQL: a bad cursor or limit is the caller's mistake. */
export function checkRunQuery(query: RunQuery): Result<void> {
  if (!Number.isSafeInteger(query.limit) || query.limit < 1 || query.limit > MAX_RUN_PAGE)
    return fail("invalid_request", "/limit", `limit must be 1–${MAX_RUN_PAGE}`);
  if (query.after !== undefined && decodeCursor(query.after) === undefined)
    return fail("invalid_request", "/after", "after must be a cursor a previous page returned as next");
  return ok(undefined);
}

/** One page from the rows `runListQuery` selected (one more than the limit, to know if another follows). */
export function runListPage(rows: Row[], limit: number): RunListPage {
  const runs = rows.slice(0, limit).map((r): RunListEntry => ({
    runId: r.run_id as string,
    state: stateOf(r),
    protocolVersion: r.protocol_version as number,
    ackedSourceSeq: r.acked_source_seq as number,
    createdAtUnixMs: r.created_at as number,
    spec: r.spec === null || r.spec === undefined ? null : runSpecFrom(r),
  }));
  const last = runs.at(-1);
  return { runs, next: rows.length > limit && last ? encodeCursor(last.createdAtUnixMs, last.runId) : null };
}

const stateOf = (r: Row): RunState =>
  r.ended === true || r.ended === 1 ? "ended" : (r.acked_source_seq as number) > 0 ? "running" : "pending";

const encodeCursor = (createdAt: number, runId: string): string =>
  Buffer.from(JSON.stringify([createdAt, runId])).toString("base64url");

function decodeCursor(cursor: string): [number, string] | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === "string")
      return [value[0] as number, value[1]];
  } catch {
    // not a cursor
  }
  return undefined;
}
