import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { ContractViolation } from "../../src/contract/errors.js";
import { EmitGate, type GatedEvent } from "../../src/runner/emit-gate.js";
import type { EventSink, Offer, PendingEvent } from "../../src/runner/event-sink.js";
import { seeded } from "../support/seed.js";

/**
 * A sink that holds `capacity` events until `ack` frees them, like the outbox under its soft
 * limit; what it admitted is its own record, independent of the gate.
 */
function boundedSink(
  capacity: number,
  options: { tooLarge?: (e: PendingEvent) => boolean; invalid?: (e: PendingEvent) => boolean } = {},
) {
  const admitted: string[] = [];
  let held = 0;
  let waiter: (() => void) | null = null;
  const sink: EventSink & { admitted: string[]; ack(n: number): void } = {
    admitted,
    offer(e): Offer {
      if (options.invalid?.(e))
        throw new ContractViolation({
          code: "schema_validation",
          path: "/payload",
          message: "refused by the contract",
        });
      if (options.tooLarge?.(e)) return { kind: "refused", code: "event_too_large", message: "never fits" };
      if (held >= capacity) return { kind: "full" };
      held++;
      admitted.push(String(e.payload.n));
      return { kind: "admitted", congested: false };
    },
    onRoom(resume) {
      waiter = resume;
    },
    ack(n) {
      held = Math.max(0, held - n);
      const w = waiter;
      waiter = null;
      w?.();
    },
  };
  return sink;
}

const event = (n: number, fromHarness = true): GatedEvent => ({
  eventType: "item.started",
  payload: { n },
  fromHarness,
});

const gateOver = (sink: EventSink) =>
  new EmitGate(sink, { pauseHarness: () => {}, resumeHarness: () => {}, invalid: () => {}, refused: () => {} });

/**
 * The delivery oracle: emit one event per step of `acks`, acknowledging that many after each,
 * then drain; the sink's own record must hold every event exactly once, in order.
 */
const everyEventOnceInOrder =
  (makeGate: (sink: EventSink) => { emit(e: GatedEvent): void; readonly waiting: number }) =>
  (capacity: number, acks: number[]) => {
    const sink = boundedSink(capacity);
    const gate = makeGate(sink);
    let n = 0;
    for (const ack of acks) {
      gate.emit(event(++n));
      if (ack > 0) sink.ack(ack);
    }
    for (let i = 0; i <= n && gate.waiting > 0; i++) sink.ack(capacity);
    assert.deepEqual(
      sink.admitted,
      Array.from({ length: n }, (_, i) => String(i + 1)),
    );
  };

describe("the emit gate (runtime.md §5.7: an event is admitted or the run fails closed, never dropped)", () => {
  it("holds what the sink cannot take, pauses the harness, and admits it in order when room comes", () => {
    const sink = boundedSink(2);
    const calls: string[] = [];
    const gate = new EmitGate(sink, {
      pauseHarness: () => calls.push("pause"),
      resumeHarness: () => calls.push("resume"),
      invalid: () => assert.fail("no invalid event"),
      refused: () => assert.fail("nothing refused"),
    });
    for (let n = 1; n <= 5; n++) gate.emit(event(n));
    assert.deepEqual(sink.admitted, ["1", "2"]);
    assert.equal(gate.waiting, 3);
    assert.deepEqual(calls, ["pause"]);
    sink.ack(2);
    assert.deepEqual(sink.admitted, ["1", "2", "3", "4"]);
    assert.deepEqual(calls, ["pause"], "still full: the harness stays paused");
    sink.ack(2);
    assert.deepEqual(sink.admitted, ["1", "2", "3", "4", "5"]);
    assert.equal(gate.waiting, 0);
    assert.deepEqual(calls, ["pause", "resume"]);
  });

  it("reports an event that can never fit and goes on with the next", () => {
    const sink = boundedSink(10, { tooLarge: (e) => e.payload.n === 2 });
    const refused: string[] = [];
    const gate = new EmitGate(sink, {
      pauseHarness: () => {},
      resumeHarness: () => {},
      invalid: () => assert.fail("no invalid event"),
      refused: (e, code) => refused.push(`${String(e.payload.n)}:${code}`),
    });
    [1, 2, 3].forEach((n) => gate.emit(event(n)));
    assert.deepEqual(sink.admitted, ["1", "3"]);
    assert.deepEqual(refused, ["2:event_too_large"]);
  });

  it("hands a harness event the contract refuses to the invalid hook, and refuses the runner's own (it can never be carried), never throwing", () => {
    const sink = boundedSink(10, { invalid: (e) => e.payload.n === 2 });
    const invalid: string[] = [];
    const refused: string[] = [];
    const gate = new EmitGate(sink, {
      pauseHarness: () => {},
      resumeHarness: () => {},
      invalid: (e, error) => invalid.push(`${String(e.payload.n)}:${error.path}`),
      refused: (e, code, message) => refused.push(`${String(e.payload.n)}:${code}:${message}`),
    });
    gate.emit(event(1));
    gate.emit(event(2));
    assert.deepEqual(invalid, ["2:/payload"]);
    gate.emit(event(2, false));
    gate.emit(event(3, false));
    assert.deepEqual(refused, ["2:schema_validation:/payload: refused by the contract"]);
    assert.deepEqual(sink.admitted, ["1", "3"], "the line goes on after a refusal");
    assert.equal(gate.waiting, 0);
  });

  it("calls admitted only once the sink has the event", () => {
    const sink = boundedSink(1);
    const gate = new EmitGate(sink, {
      pauseHarness: () => {},
      resumeHarness: () => {},
      invalid: () => {},
      refused: () => {},
    });
    let done = false;
    gate.emit(event(1));
    gate.emit({ ...event(2, false), admitted: () => (done = true) });
    assert.equal(done, false);
    sink.ack(1);
    assert.equal(done, true);
  });

  it("delivers every event exactly once and in order, whatever the capacity and ACK schedule (seeded)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 60 }),
        everyEventOnceInOrder(gateOver),
      ),
      seeded("emit gate", 200),
    );
  });

  it("the same property fails on a gate that drops what does not fit (the oracle can fail)", () => {
    // What the runner did before this gate: offer once and forget the answer.
    const dropping = (sink: EventSink) => ({ emit: (e: GatedEvent) => void sink.offer(e), waiting: 0 });
    assert.throws(() => everyEventOnceInOrder(dropping)(1, [0, 0, 0]), assert.AssertionError);
  });
});
