import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PrpApiError } from "../../src/client/index.js";
import { backoffMs } from "../../src/worker/backoff.js";
import { pollFailure } from "../../src/worker/poll-failure.js";
import { newRequestId } from "../../src/worker/request-id.js";

describe("the poll's retry parts", () => {
  it("the backoff doubles up to its bound, and the jitter takes off at most half", () => {
    const at = (random: number) => (n: number) => backoffMs(n, { baseMs: 100, maxMs: 1000, random: () => random });
    assert.deepEqual([0, 1, 2, 3, 4, 50].map(at(0.999999)), [100, 200, 400, 800, 1000, 1000]);
    assert.deepEqual([0, 1, 2, 3, 4, 50].map(at(0)), [50, 100, 200, 400, 500, 500]);
  });

  it("network, 5xx, 429 and a garbled answer are retried; 401/403 mean revoked; another 4xx is refused", () => {
    const e = (status: number, code = "x") => new PrpApiError(status, code, "m");
    assert.deepEqual(
      [e(0), e(500), e(503), e(429), e(200, "invalid_response"), new TypeError("fetch failed")].map(pollFailure),
      ["retry", "retry", "retry", "retry", "retry", "retry"],
    );
    assert.deepEqual([e(401), e(403)].map(pollFailure), ["revoked", "revoked"]);
    assert.deepEqual([e(400), e(404), e(413)].map(pollFailure), ["refused", "refused", "refused"]);
  });

  it("a requestId is fresh each time and within the API's pattern", () => {
    const ids = new Set(Array.from({ length: 100 }, newRequestId));
    assert.equal(ids.size, 100);
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{8,64}$/);
  });
});
