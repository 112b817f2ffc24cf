import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SessionCache } from "../../src/api/run-view.js";
import type { LoggedEvent } from "../../src/authority/store.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { applyEvents } from "../../src/reducer/apply-event.js";
import { createSnapshot } from "../../src/reducer/snapshot.js";
import { event } from "../contract/samples.js";

const row = (seq: number): LoggedEvent => {
  const e = event(1, { sourceEventId: `event_${seq}`, sourceSeq: seq, payload: { text: `d${seq} ` } });
  return {
    sourceSeq: seq,
    sourceEventId: `event_${seq}`,
    eventType: "item.delta",
    priority: 2,
    envelope: JSON.stringify(e),
    committedAtUnixMs: 0,
  };
};

describe("the API's session cache", () => {
  it("reads only the events committed since it was last asked, and equals a reduction from scratch", async () => {
    const rows = Array.from({ length: 2500 }, (_, i) => row(i + 1));
    let read = 0;
    const store = {
      eventLog: async (_runId: string, after: number, limit: number) => {
        const page = rows.filter((r) => r.sourceSeq > after).slice(0, limit);
        read += page.length;
        return page;
      },
    };
    const cache = new SessionCache(store, 2);
    const fresh = (upto: number) =>
      applyEvents(
        createSnapshot({}),
        rows.slice(0, upto).map((r) => JSON.parse(r.envelope) as PrpEvent),
      );
    assert.deepEqual(await cache.session("run_1", 2000), fresh(2000));
    assert.equal(read, 2000);
    assert.deepEqual(await cache.session("run_1", 2500), fresh(2500));
    assert.equal(read, 2500, "the second ask read only the 500 new events");
    await cache.session("run_1", 2500);
    assert.equal(read, 2500, "nothing new: nothing read");
    // Two other runs push run_1 out (at most 2 kept): it is reduced from the start again.
    await cache.session("run_2", 1);
    await cache.session("run_3", 1);
    read = 0;
    assert.deepEqual(await cache.session("run_1", 2500), fresh(2500));
    assert.equal(read, 2500);
  });
});
