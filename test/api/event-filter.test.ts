import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { eventFilter, MAX_EVENT_SCAN, scanEvents } from "../../src/api/event-filter.js";
import type { LoggedEvent } from "../../src/authority/store.js";

/** A log of `total` events, every `every`-th one a match for `q=needle`; counts what was read. */
function log(total: number, every: number) {
  let read = 0;
  const row = (seq: number) =>
    ({
      sourceSeq: seq,
      eventType: "item.delta",
      envelope: JSON.stringify({ payload: { text: seq % every === 0 ? "Needle" : "hay" } }),
    }) as LoggedEvent;
  const eventLog = async (after: number, limit: number) => {
    const rows = Array.from({ length: Math.max(0, Math.min(limit, total - after)) }, (_, i) => row(after + i + 1));
    read += rows.length;
    return rows;
  };
  return { eventLog, read: () => read };
}

describe("event filter: a bounded scan", () => {
  it("no filter when neither type nor q is given; types split on commas", () => {
    assert.equal(eventFilter(undefined, undefined), null);
    assert.deepEqual([...eventFilter(["a,b", "c"], undefined)!.types], ["a", "b", "c"]);
  });

  it("a sparse filter over a long log reads at most MAX_EVENT_SCAN events a page and pages on to the end", async () => {
    const total = 3 * MAX_EVENT_SCAN + 500;
    const source = log(total, 7_000);
    const filter = eventFilter(undefined, "needle")!;
    const first = await scanEvents(source.eventLog, filter, 0, 100);
    assert.equal(source.read(), MAX_EVENT_SCAN, "one page reads the bound, not the run");
    assert.deepEqual(
      first.rows.map((r) => r.sourceSeq),
      [7_000],
    );
    assert.equal(first.next, MAX_EVENT_SCAN, "next is the last event read: the scan resumes there");
    const found = first.rows.map((r) => r.sourceSeq);
    let after = first.next;
    for (let pages = 0; after < total; pages++) {
      assert.ok(pages < 10, "the scan reaches the end");
      const page = await scanEvents(source.eventLog, filter, after, 100);
      found.push(...page.rows.map((r) => r.sourceSeq));
      after = page.next;
    }
    assert.deepEqual(found, [7_000, 14_000, 21_000, 28_000]);
  });

  it("a full page ends at its last match", async () => {
    const source = log(100, 10);
    const page = await scanEvents(source.eventLog, eventFilter(["item.delta"], "needle")!, 0, 2);
    assert.deepEqual([page.rows.map((r) => r.sourceSeq), page.next], [[10, 20], 20]);
  });
});
