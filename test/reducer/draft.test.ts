import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import fc from "fast-check";
import { decode, type PRPReplayFixture, type PrpEvent } from "../../src/contract/index.js";
import { protocolDir } from "../../src/contract/package-root.js";
import {
  applyEvent,
  createSnapshot,
  prettyJson,
  SessionDraft,
  type SessionSnapshot,
  type SnapshotOrigin,
} from "../../src/reducer/index.js";
import { acceptedReplayFixtures, snapshotGolden } from "../../scripts/replay-goldens.js";
import { seeded } from "../support/seed.js";
import { anyEvent, contiguousStream, interleavings, sourceDeliveries } from "./arbitraries.js";

/**
 * The oracle: the per-event algorithm (runtime.md §3.2), one `applyEvent` (one copy) per event,
 * and the batch's duplicates as §3.3 states them: every id the batch holds more than once.
 */
function oneByOne(origin: SnapshotOrigin, events: PrpEvent[]): SessionSnapshot {
  let snapshot = createSnapshot(origin);
  for (const event of events) snapshot = applyEvent(snapshot, event);
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const { sourceEventId: id } of events) (seen.has(id) ? repeated : seen).add(id);
  return { ...snapshot, duplicateEventIds: [...repeated].sort() };
}

/** The events cut at `cuts` (positions taken modulo the length), in order: the pages a fold reads. */
function parts(events: PrpEvent[], cuts: number[]): PrpEvent[][] {
  const at = [...new Set(cuts.map((c) => c % (events.length + 1)))].sort((a, b) => a - b);
  return [0, ...at].map((from, i) => events.slice(from, at[i] ?? events.length));
}

/** One draft fed the parts: what the API's fold does, a page at a time. */
function drafted(origin: SnapshotOrigin, pages: PrpEvent[][]): SessionSnapshot {
  const draft = new SessionDraft(createSnapshot(origin));
  for (const page of pages) draft.apply(page);
  return draft.close();
}

const root = protocolDir();
const fixture = (name: string): PRPReplayFixture => {
  const d = decode(readFileSync(join(root, "fixtures/replay", `${name}.json`)), { kind: "fixture" });
  assert.ok(d.ok, d.ok ? "" : d.error.message);
  return d.value;
};
const cuts = fc.array(fc.nat(), { maxLength: 6 });
/** Two sources' deliveries (repeats, gaps, out of order) interleaved, and events of any kind. */
const stream = fc
  .tuple(sourceDeliveries("runner_a"), sourceDeliveries("runner_b"), fc.array(anyEvent, { maxLength: 8 }))
  .chain(([a, b, any]) => interleavings(a, b).map((mixed) => [...mixed, ...any]));

describe("a SessionDraft fed a batch in parts equals the reducer applied event by event", () => {
  for (const { name } of acceptedReplayFixtures(root)) {
    it(`${name}: any split of the fixture's events gives its golden snapshot, and the oracle's`, () => {
      const f = fixture(name);
      const origin = { fixtureName: f.name, identity: f.identity, capabilities: f.capabilities } as SnapshotOrigin;
      const events = f.events as PrpEvent[];
      const golden = readFileSync(snapshotGolden(root, name), "utf8").replace(/\r\n/g, "\n");
      assert.equal(prettyJson(oneByOne(origin, events)), golden, "the oracle reproduces the golden");
      fc.assert(
        fc.property(cuts, (c) => {
          assert.equal(prettyJson(drafted(origin, parts(events, c))), golden);
        }),
        seeded(`${name}: any split of the fixture's events gives its golden`, 50),
      );
    });
  }

  it("a random stream (repeats, gaps, out-of-order, any event type) split anywhere", () => {
    fc.assert(
      fc.property(stream, cuts, (events, c) => {
        assert.deepEqual(drafted({}, parts(events, c)), oneByOne({}, events));
      }),
      seeded("a draft fed a random stream in parts equals the reducer event by event", 300),
    );
  });

  it("the check sees a fold that drops an event: the snapshot differs from the oracle's", () => {
    fc.assert(
      fc.property(contiguousStream("runner_a", 2), cuts, fc.nat(), (events, c, pick) => {
        const dropped = events.filter((_, i) => i !== pick % events.length);
        assert.notDeepEqual(drafted({}, parts(dropped, c)), oneByOne({}, events));
      }),
      seeded("a draft that drops an event differs from the oracle"),
    );
  });

  it("never changes its input, gives the input back when nothing changed, and refuses use after close", () => {
    const events = fc.sample(contiguousStream("runner_a", 3), { seed: 1, numRuns: 1 })[0]!;
    const before = drafted({}, [events]);
    const copy = structuredClone(before);
    const again = new SessionDraft(before);
    again.apply(events.slice(0, 1));
    again.apply(events.slice(1));
    assert.equal(again.close(), before, "an applied batch again: the same snapshot");
    const more = new SessionDraft(before);
    more.apply(fc.sample(contiguousStream("runner_b"), { seed: 2, numRuns: 1 })[0]!);
    assert.notEqual(more.close(), before);
    assert.deepEqual(before, copy, "the input snapshot is untouched");
    assert.throws(() => more.apply(events), /after close/);
    assert.throws(() => more.close(), /close twice/);
  });
});
