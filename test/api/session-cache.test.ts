import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FactsCache, SessionCache, sessionAndFacts } from "../../src/api/run-view.js";
import { emptyFacts, foldFacts } from "../../src/api/run-facts.js";
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

  it("reads a run's events once for both its session and its facts, each from where it stands", async () => {
    const rows = Array.from({ length: 2500 }, (_, i) => row(i + 1));
    let read = 0;
    const store = {
      eventLog: async (_runId: string, after: number, limit: number) => {
        const page = rows.filter((r) => r.sourceSeq > after).slice(0, limit);
        read += page.length;
        return page;
      },
    };
    const ctx = { store, sessions: new SessionCache(store), facts: new FactsCache(store) };
    const events = (upto: number) => rows.slice(0, upto).map((r) => JSON.parse(r.envelope) as PrpEvent);
    const factsOf = (upto: number) => {
      const facts = emptyFacts();
      foldFacts(facts, events(upto));
      return facts;
    };
    let both = await sessionAndFacts(ctx, "run_1", 2000);
    assert.equal(read, 2000, "one read of the log for both");
    assert.deepEqual(both.session, applyEvents(createSnapshot({}), events(2000)));
    assert.deepEqual(both.facts, factsOf(2000));
    // The facts alone move on (a list page asked): the next read starts at the session's 2000.
    await ctx.facts.facts("run_1", 2200);
    read = 0;
    both = await sessionAndFacts(ctx, "run_1", 2500);
    assert.equal(read, 500);
    assert.deepEqual(both.session, applyEvents(createSnapshot({}), events(2500)));
    assert.deepEqual(both.facts, factsOf(2500), "the facts took only the events past their 2200");
  });
});
