import { fail, ok, type Result } from "./errors.js";
import { runStateOf } from "./run-state.js";
import { dispatchFrom, runSpecFrom, truthy, type Row } from "./store-rows.js";
import type { DispatchRow, RunListEntry, RunListPage, RunQuery, RunState } from "./store.js";

/** Whether the run whose id is `${alias}.run_id` has a committed run.terminal, as SQL both databases take. */
export const committedTerminal = (alias: string): string =>
  `EXISTS (SELECT 1 FROM committed_events e WHERE e.run_id = ${alias}.run_id AND e.event_type = 'run.terminal')`;

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
  const p = (value: unknown) => {
    values.push(value);
    return param(values.length);
  };
  const where: string[] = [];
  const terminal = committedTerminal("r");
  if (query.state) where.push(STATE_FILTER[query.state](terminal));
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
      s.spec, s.spec_digest, s.labels, s.priority, s.created_by, s.created_at AS spec_created_at,
      ${DISPATCH_COLUMNS}
    FROM runs r LEFT JOIN run_specs s ON s.run_id = r.run_id LEFT JOIN dispatch d ON d.run_id = r.run_id
    ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
    ORDER BY r.created_at DESC, r.run_id DESC
    LIMIT ${p(query.limit + 1)}`;
  return { text, values };
}

/** The dispatch row beside a run, prefixed `d_` apart from the spec's columns. */
const DISPATCH_FIELDS = [
  "state",
  "priority",
  "queued_at",
  "attempts",
  "worker_id",
  "claim_request_id",
  "claimed_at",
  "ended_at",
  "end_reason",
  "end_detail",
];
const DISPATCH_COLUMNS = DISPATCH_FIELDS.map((f) => `d.${f} AS d_${f}`).join(", ");

/**
 * Each state as a filter, the same order of judgement as `stateOf`: a committed terminal, then
 * an ended dispatch, then the queue, then the cursor.
 */
const STATE_FILTER: Record<RunState, (terminal: string) => string> = {
  ended: (t) => `(${t} OR d.state = 'ended')`,
  queued: (t) => `NOT ${t} AND d.state = 'queued'`,
  claimed: (t) => `NOT ${t} AND d.state = 'claimed' AND r.acked_source_seq = 0`,
  running: (t) => `NOT ${t} AND COALESCE(d.state, 'claimed') = 'claimed' AND r.acked_source_seq > 0`,
  pending: (t) => `NOT ${t} AND d.state IS NULL AND r.acked_source_seq = 0`,
};

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
    dispatch: r.d_state === null || r.d_state === undefined ? null : dispatchOf(r),
  }));
  const last = runs.at(-1);
  return { runs, next: rows.length > limit && last ? encodeCursor(last.createdAtUnixMs, last.runId) : null };
}

/** The run list's state: the same judgement as every other view's (run-state.ts). A run's terminal is its last event. */
const stateOf = (r: Row): RunState =>
  runStateOf(
    {
      ackedSourceSeq: Number(r.acked_source_seq),
      terminalSourceSeq: truthy(r.ended) ? Number(r.acked_source_seq) : null,
    },
    r.d_state === null || r.d_state === undefined ? null : { state: r.d_state as DispatchRow["state"] },
  );

const dispatchOf = (r: Row): DispatchRow =>
  dispatchFrom({
    run_id: r.run_id,
    labels: r.labels ?? "{}",
    ...Object.fromEntries(DISPATCH_FIELDS.map((f) => [f, r[`d_${f}`]])),
  });

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
