import assert from "node:assert/strict";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { durableRunner, SecureAuthority } from "../security/support.js";
import { withPgClient } from "../support/postgres.js";
import { within } from "../support/within.js";

/** The harness of these runs: many items, slow enough that a fault lands mid-run. */
export const slowHarness = (): FakeHarnessDriver =>
  new FakeHarnessDriver({ scriptPath: resolveScriptPath("many-items"), delayMs: 20 });

/**
 * A run's event types without deltas (which coalesce by timing): what its harness did, in order.
 * The harness's goal reports come from its own stream, answering session.open while the next
 * command travels, so their place among the runner's events is a race the run may win either
 * way: they are counted apart, at the end, and the rest must keep its order.
 */
export const shape = (types: string[]): string[] => {
  const kept = types.filter((t) => t !== "item.delta");
  const goals = kept.filter((t) => t.startsWith("session.goal."));
  return [...kept.filter((t) => !t.startsWith("session.goal.")), ...goals.sort()];
};

/** The shape of an undisturbed run of `slowHarness` (on SQLite: the store does not change it). */
export async function referenceShape(): Promise<string[]> {
  const authority = await SecureAuthority.start();
  try {
    const identity = await authority.newRun();
    const { runner, log } = await durableRunner(authority, identity, { driver: slowHarness() });
    assert.deepEqual(
      await within(runner.run(), 60_000, "the reference run"),
      { code: 0, reason: "run_delivered" },
      log.join("\n"),
    );
    return shape((authority.committed.get(identity.runId) ?? []).map((e) => e.eventType));
  } finally {
    await authority.close();
  }
}

export interface LoggedRow {
  source_seq: number;
  source_event_id: string;
  event_type: string;
}

export interface CommandRecord {
  command_type: string;
  status: string | null;
  delivery_count: number;
}

/** What the database holds for a run, read apart from the store's code: the judge's record. */
export async function runRecord(url: string, runId: string): Promise<{ log: LoggedRow[]; commands: CommandRecord[] }> {
  return withPgClient(url, async (c) => {
    const log = (
      await c.query<LoggedRow>(
        "SELECT source_seq::int, source_event_id, event_type FROM event_log WHERE run_id = $1 ORDER BY source_seq",
        [runId],
      )
    ).rows;
    const commands = (
      await c.query<CommandRecord>(
        "SELECT command_type, status, delivery_count::int FROM commands WHERE run_id = $1 ORDER BY controller_seq",
        [runId],
      )
    ).rows;
    return { log, commands };
  });
}

/**
 * A run's record is whole: its log is 1..n without a gap or a repeat and ends in one
 * run.terminal, it has the shape of an undisturbed run (a harness effect run twice, or lost,
 * would change it), and each of the three opening commands has one result.
 */
export function assertWhole(log: LoggedRow[], commands: CommandRecord[], reference: string[]): void {
  assert.ok(log.length > 3, `a run's worth of events, got ${log.length}`);
  assert.deepEqual(
    log.map((e) => e.source_seq),
    Array.from({ length: log.length }, (_, i) => i + 1),
    "contiguous from 1",
  );
  assert.equal(new Set(log.map((e) => e.source_event_id)).size, log.length, "no event twice");
  assert.deepEqual(
    log.filter((e) => e.event_type === "run.terminal").map((e) => e.source_seq),
    [log.length],
    "one terminal, last",
  );
  assert.deepEqual(
    shape(log.map((e) => e.event_type)),
    reference,
    "the events of an undisturbed run, each once, in order",
  );
  assert.deepEqual(
    commands.map((c) => [c.command_type, c.status]),
    [
      ["run.prepare", "completed"],
      ["session.open", "completed"],
      ["turn.start", "completed"],
    ],
  );
}
