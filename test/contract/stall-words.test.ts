import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { spanWords, stalledWords } from "../../src/contract/stall-words.js";

const stalled = (turnTerminalState: string, message?: string) => ({
  turnTerminalState,
  runTerminalState: "cancelled",
  stopReason: { kind: "stall", code: "stalled", ...(message !== undefined ? { message } : {}) },
});

describe("a stalled run in a person's words (the console's failure card)", () => {
  it("says how long it was silent and how far the policy went", () => {
    const message = "no progress reported for 15 min during turn turn_1";
    assert.equal(
      stalledWords(stalled("interrupted", message)),
      "stalled — no progress reported for 15 min during turn turn_1; the turn was interrupted",
    );
    assert.equal(
      stalledWords(stalled("cancelled", message)),
      "stalled — no progress reported for 15 min during turn turn_1; the turn was interrupted, then the run cancelled when it did not end within the grace",
    );
    assert.match(stalledWords(stalled("cancelled"))!, /^stalled — no progress reported;/);
  });

  it("says nothing of a run that did not stall", () => {
    assert.equal(stalledWords({ turnTerminalState: "interrupted", runTerminalState: "cancelled" }), null);
    assert.equal(stalledWords({ stopReason: { kind: "runner", code: "event_refused" } }), null);
  });

  it("reads spans as minutes, seconds or milliseconds", () => {
    assert.deepEqual([900_000, 90_000, 30_000, 1_500, 250].map(spanWords), [
      "15 min",
      "90 s",
      "30 s",
      "1500 ms",
      "250 ms",
    ]);
  });
});
