import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { decodeValue, type PrpEvent } from "../../src/contract/index.js";
import {
  applyEvent,
  applyEvents,
  prettyJson,
  reduceEvents,
  sourceKey,
  type SessionSnapshot,
} from "../../src/reducer/index.js";
import {
  anyEvent,
  contiguousStream,
  envelope,
  interleavings,
  projectingBody,
  sourceDeliveries,
} from "./arbitraries.js";
import { seeded } from "../support/seed.js";

const reduce = (events: PrpEvent[]) => reduceEvents(null, null, events);

/** The snapshot without the named keys, to compare everything else. */
function without(snapshot: SessionSnapshot, ...keys: Array<keyof SessionSnapshot>): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...snapshot };
  for (const key of keys) delete copy[key];
  return copy;
}

/** What the snapshot says about one source: its sequencing outcome and its applied events. */
function perSource(snapshot: SessionSnapshot, key: string, ids: Set<string>) {
  return {
    cursor: snapshot.sourceCursors[key],
    gaps: snapshot.gaps.filter((g) => g.sourceKey === key),
    processed: snapshot.processedEventIds.filter((id) => ids.has(id)),
    duplicates: snapshot.duplicateEventIds.filter((id) => ids.has(id)),
    outOfOrder: snapshot.outOfOrderEventIds.filter((id) => ids.has(id)),
    timeline: snapshot.timeline.filter((t) => ids.has(t.sourceEventId)).map(({ position: _, ...rest }) => rest),
  };
}

describe("reducer properties", () => {
  it("the generators yield schema-valid events (so the properties are about valid input)", () => {
    fc.assert(
      fc.property(fc.array(anyEvent, { maxLength: 5 }), sourceDeliveries("runner_a"), (any, deliveries) => {
        for (const event of [...any, ...deliveries]) {
          const d = decodeValue(event, { kind: "event" });
          assert.ok(d.ok, d.ok ? "" : `${d.error.code} at ${d.error.path}: ${d.error.message}`);
        }
      }),
      seeded("the generators yield schema-valid events (so the properties…", 200),
    );
  });

  it("replaying a batch twice equals replaying it once", () => {
    fc.assert(
      fc.property(sourceDeliveries("runner_a"), sourceDeliveries("runner_b"), (a, b) => {
        const batch = [...a, ...b];
        const once = reduce(batch);
        const twice = applyEvents(once, batch);
        assert.deepEqual(twice, once);
        assert.equal(twice, once, "an applied batch changes nothing, so the same snapshot comes back");
      }),
      seeded("replaying a batch twice equals replaying it once"),
    );
  });

  it("a byte-identical duplicate never changes the snapshot", () => {
    fc.assert(
      fc.property(
        sourceDeliveries("runner_a").filter((e) => e.length > 0),
        fc.nat(),
        fc.nat(),
        (events, pick, offset) => {
          const before = reduce(events);
          const i = pick % events.length;
          const copy = structuredClone(events[i]!);
          assert.equal(applyEvent(before, copy), before, "applying a delivered event again returns the same snapshot");
          // Delivered again later in the same batch: only duplicateEventIds notes it.
          const at = i + 1 + (offset % (events.length - i));
          const after = reduce([...events.slice(0, at), copy, ...events.slice(at)]);
          assert.deepEqual(without(after, "duplicateEventIds"), without(before, "duplicateEventIds"));
          assert.deepEqual(
            after.duplicateEventIds,
            [...new Set([...before.duplicateEventIds, copy.sourceEventId])].sort(),
          );
        },
      ),
      seeded("a byte-identical duplicate never changes the snapshot"),
    );
  });

  it("removing one event from a source yields exactly one gap naming its seq, and integrity gap_detected", () => {
    fc.assert(
      fc.property(contiguousStream("runner_a", 2), fc.nat(), (events, pick) => {
        const removed = pick % (events.length - 1); // not the last: a stream may simply end early
        const snapshot = reduce(events.filter((_, i) => i !== removed));
        const seq = removed + 1;
        assert.deepEqual(snapshot.gaps, [
          { sourceKey: "runner:runner_a", expected: seq, received: seq + 1, missing: [seq] },
        ]);
        assert.equal(snapshot.integrity, "gap_detected");
        assert.equal(reduce(events).integrity, "complete");
      }),
      seeded("removing one event from a source yields exactly one gap…"),
    );
  });

  it("an event at or behind its source's cursor is recorded out of order and never applied", () => {
    fc.assert(
      fc.property(contiguousStream("runner_a"), projectingBody(""), fc.nat(), (events, body, pick) => {
        const before = reduce(events);
        const late = envelope("runner_a", 1 + (pick % events.length), "event_late", body);
        for (const after of [applyEvent(before, late), reduce([...events, late])]) {
          assert.deepEqual(after.outOfOrderEventIds, ["event_late"]);
          assert.equal(after.integrity, "gap_detected");
          assert.deepEqual(
            without(after, "outOfOrderEventIds", "integrity"),
            without(before, "outOfOrderEventIds", "integrity"),
          );
        }
      }),
      seeded("an event at or behind its source's cursor is recorded out…"),
    );
  });

  it("two sources interleaved in any order give each source the same per-source result", () => {
    const streams = fc.tuple(sourceDeliveries("runner_a", "a_"), sourceDeliveries("runner_b", "b_"));
    fc.assert(
      fc.property(
        streams.chain(([a, b]) => fc.tuple(fc.constant(a), fc.constant(b), interleavings(a, b))),
        ([a, b, mixed]) => {
          const together = reduce(mixed);
          for (const alone of [a, b]) {
            if (alone.length === 0) continue;
            const key = sourceKey(alone[0]!);
            const ids = new Set(alone.map((e) => e.sourceEventId));
            assert.deepEqual(perSource(together, key, ids), perSource(reduce(alone), key, ids));
          }
        },
      ),
      seeded("two sources interleaved in any order give each source the…"),
    );
  });

  it("no schema-valid event sequence makes the reducer throw", () => {
    fc.assert(
      fc.property(fc.array(anyEvent, { maxLength: 30 }), (events) => {
        const snapshot = reduce(events);
        assert.deepEqual(
          snapshot.timeline.map((t) => t.position),
          snapshot.timeline.map((_, i) => i + 1),
        );
        assert.equal(
          snapshot.integrity,
          snapshot.gaps.length > 0 || snapshot.outOfOrderEventIds.length > 0 ? "gap_detected" : "complete",
        );
        assert.doesNotThrow(() => prettyJson(snapshot));
        for (const event of events) applyEvent(snapshot, event);
      }),
      seeded("no schema-valid event sequence makes the reducer throw", 300),
    );
  });
});
