import type { DispatchRow, LoggedEvent } from "../../src/authority/store.js";

/** One runner a worker started, from its own record (`started.jsonl`): its exit when it has one. */
export interface RunnerStart {
  worker: string;
  runId: string;
  attempt: number;
  pid: number | null;
  exitCode: number | null | undefined;
}

/**
 * Each run executed exactly once, judged from two records the code under test does not write
 * about itself: the authority's run logs, and each worker's own record of what it started.
 * Returns every problem found (empty: none).
 *
 * - each run's log is seq 1…n without a gap or repeat, with exactly one `harness.starting` (its
 *   harness was started once, as far as anything was committed) and one `run.terminal`, last;
 * - each run was started by at most as many runners as it had claims, and by exactly one
 *   runner that exited 0 when it succeeded;
 * - a run nobody cancelled or lost was started at all (it did not end without a runner).
 */
export function judgeExactlyOnce(
  runIds: readonly string[],
  logs: ReadonlyMap<string, readonly LoggedEvent[]>,
  starts: readonly RunnerStart[],
  dispatch: ReadonlyMap<string, DispatchRow>,
): string[] {
  const problems: string[] = [];
  for (const runId of runIds) {
    const log = logs.get(runId) ?? [];
    log.forEach((e, i) => {
      if (e.sourceSeq !== i + 1) problems.push(`${runId}: event ${i + 1} of its log has seq ${e.sourceSeq}`);
    });
    const count = (type: string) => log.filter((e) => e.eventType === type).length;
    if (count("run.terminal") !== 1) problems.push(`${runId}: ${count("run.terminal")} run.terminal events`);
    else if (log.at(-1)?.eventType !== "run.terminal") problems.push(`${runId}: run.terminal is not its last event`);
    if (count("harness.starting") !== 1)
      problems.push(`${runId}: its harness started ${count("harness.starting")} times`);
    const mine = starts.filter((s) => s.runId === runId);
    const d = dispatch.get(runId);
    if (mine.length === 0) problems.push(`${runId}: no worker records starting it`);
    if (d && mine.length > d.attempts)
      problems.push(`${runId}: ${mine.length} runners started for ${d.attempts} claim(s)`);
    const zero = mine.filter((s) => s.exitCode === 0).length;
    if (zero > 1) problems.push(`${runId}: ${zero} runners exited 0`);
  }
  return problems;
}

/**
 * No cap exceeded at any instant, judged from the claim and end times the authority recorded
 * (each taken inside its transaction; see DispatchRow.claimedAtUnixMs): every run holds a slot
 * of each cap that applies to it from its claim until its end. At one instant an end is counted
 * before a claim. A run still claimed holds its slot to the end of time.
 */
export function judgeCaps(rows: readonly DispatchRow[], caps: Readonly<Record<string, number>>): string[] {
  const problems: string[] = [];
  for (const [scope, max] of Object.entries(caps)) {
    const marks: Array<[number, number]> = [];
    for (const r of rows) {
      if (r.claimedAtUnixMs === null) continue;
      const applies = scope === "*" || Object.entries(r.labels).some(([k, v]) => `${k}=${v}` === scope);
      if (!applies) continue;
      marks.push([r.claimedAtUnixMs, +1]);
      if (r.endedAtUnixMs !== null) marks.push([r.endedAtUnixMs, -1]);
    }
    marks.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let active = 0;
    for (const [at, step] of marks) {
      active += step;
      if (active > max) {
        problems.push(`cap ${scope}: ${active} runs held a slot at ${new Date(at).toISOString()}, over its ${max}`);
        break;
      }
    }
  }
  return problems;
}

/** Every start a worker's `started.jsonl` records, joined with its exit line. */
export function parseWorkerRecord(worker: string, text: string): RunnerStart[] {
  const starts = new Map<string, RunnerStart>();
  const out: RunnerStart[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const r = JSON.parse(line) as {
      runId: string;
      attempt?: number;
      pid?: number;
      exitCode?: number | null;
      exitedAt?: string;
      startedAt?: string;
    };
    const key = `${r.runId}#${r.attempt ?? "?"}`;
    if (r.exitedAt !== undefined) {
      const start = [...out].reverse().find((s) => s.runId === r.runId && s.exitCode === undefined);
      if (start) start.exitCode = r.exitCode ?? null;
      continue;
    }
    const known = starts.get(key);
    if (known) {
      if (r.pid !== undefined) known.pid = r.pid;
      continue;
    }
    const start: RunnerStart = {
      worker,
      runId: r.runId,
      attempt: r.attempt ?? 0,
      pid: r.pid ?? null,
      exitCode: undefined,
    };
    starts.set(key, start);
    out.push(start);
  }
  return out;
}
