import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { IntervalWheel, grainOf, type WheelClock } from "../../src/transport/interval-wheel.js";
import { ManualTimers } from "../support/manual-timers.js";
import fc from "fast-check";
import { seeded } from "../support/seed.js";

/** A wheel on the manual clock, counting the wake-ups it asked for that fired. */
function rig(grainMs: number) {
  const timers = new ManualTimers(0);
  let wakeUps = 0;
  const clock: WheelClock = {
    now: timers.now,
    once: (ms, fn) =>
      timers.after(ms, () => {
        wakeUps++;
        fn();
      }),
  };
  return { timers, wheel: new IntervalWheel(grainMs, clock), wakeUps: () => wakeUps };
}

describe("interval wheel (heartbeats that share wake-ups)", () => {
  it("grains: a tenth of the interval, at most 1 s, at least 1 ms", () => {
    assert.equal(grainOf(30_000), 1_000);
    assert.equal(grainOf(60_000), 1_000);
    assert.equal(grainOf(250), 25);
    assert.equal(grainOf(5), 1);
  });

  it("runs 1,000 beats made at scattered moments in one wake-up a grain, none early, none a grain late", () => {
    const starts = fc.array(fc.integer({ min: 0, max: 29_999 }), { minLength: 1_000, maxLength: 1_000 });
    fc.assert(
      fc.property(starts, (scattered) => {
        const { timers, wheel, wakeUps } = rig(1_000);
        const made: number[] = [];
        const fired: number[][] = [];
        // Made one by one over the first interval, each at its own moment, as connections are.
        for (const [i, start] of [...scattered].sort((x, y) => x - y).entries()) {
          timers.advance(start - timers.now());
          made.push(timers.now());
          fired.push([]);
          wheel.every(30_000, () => fired[i]!.push(timers.now()));
        }
        const before = wakeUps();
        timers.advance(300_000 - timers.now());
        const wakes = wakeUps() - before;
        assert.ok(wakes <= 271, `${wakes} wake-ups in 270 s for beats on a 1 s grid`);
        for (const [i, times] of fired.entries()) {
          assert.ok(times.length >= 9, `beat ${i} fired ${times.length} times in 270 s or more`);
          times.forEach((at, k) => {
            const due = made[i]! + (k + 1) * 30_000;
            assert.ok(at >= due, `beat ${i} fired at ${at}, before it was due at ${due}`);
            assert.ok(at < due + 1_000, `beat ${i} fired at ${at}, a grain or more after ${due}`);
          });
        }
      }),
      seeded("interval wheel: scattered beats", 5),
    );
  });

  it("a cancelled beat does not run again, and a wheel with no beats waits on no timer", () => {
    const { timers, wheel } = rig(100);
    let a = 0;
    let b = 0;
    const cancelA = wheel.every(1_000, () => a++);
    const cancelB = wheel.every(1_000, () => b++);
    timers.advance(1_000);
    assert.deepEqual([a, b], [1, 1]);
    cancelA();
    timers.advance(3_000);
    assert.deepEqual([a, b], [1, 4]);
    cancelB();
    cancelB(); // twice is harmless
    assert.equal(wheel.size, 0);
    assert.equal(timers.waiting, 0, "no wake-up is left pending");
    timers.advance(5_000);
    assert.deepEqual([a, b], [1, 4]);
  });

  it("a beat cancelled by another of its slot does not run, and one can cancel itself", () => {
    const { timers, wheel } = rig(100);
    const ran: string[] = [];
    let cancelSecond = (): void => {};
    const cancelFirst = wheel.every(1_000, () => {
      ran.push("first");
      cancelSecond();
      cancelFirst();
    });
    cancelSecond = wheel.every(1_000, () => ran.push("second"));
    timers.advance(5_000);
    assert.deepEqual(ran, ["first"]);
    assert.equal(wheel.size, 0);
  });

  it("does not make up missed beats: after a stall the next is the first due after now", () => {
    let now = 0;
    let wake: { at: number; fn: () => void } | null = null;
    const wheel = new IntervalWheel(100, {
      now: () => now,
      once: (ms, fn) => {
        wake = { at: now + ms, fn };
        return () => (wake = null);
      },
    });
    const at: number[] = [];
    wheel.every(1_000, () => at.push(now));
    assert.equal(wake!.at, 1_000);
    now = 10_500; // the wake-up runs ten intervals late, as a stopped process's does
    wake!.fn();
    assert.deepEqual(at, [10_500], "one beat for the ten missed");
    assert.equal(wake!.at, 11_000, "the next is the first due after now, not one of those missed");
    now = 11_000;
    wake!.fn();
    assert.deepEqual(at, [10_500, 11_000]);
  });

  it("a callback that throws does not keep the others of its slot from running, and the wheel goes on", () => {
    const { timers, wheel } = rig(100);
    let others = 0;
    wheel.every(1_000, () => {
      throw new Error("a broken beat");
    });
    wheel.every(1_000, () => others++);
    assert.throws(() => timers.advance(1_000), /a broken beat/);
    assert.equal(others, 1);
    assert.throws(() => timers.advance(1_000), /a broken beat/);
    assert.equal(others, 2, "the wheel woke again after the error");
  });
});
