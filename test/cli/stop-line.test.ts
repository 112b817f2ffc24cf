import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { stopReasonLine } from "../../src/cli/stop-line.js";
import type * as T from "../../src/contract/generated/types.js";

const stop = (kind: string, code: string, message?: string): T.PRPStopReason => ({
  schema: "paperclip.prp.stop_reason.v1",
  schemaVersion: 1,
  receiptId: "stop_r",
  kind,
  code,
  retryable: false,
  ...(message !== undefined ? { message } : {}),
});

describe("the stop reason line prp run and prp replay print", () => {
  it("an agent that could not start: its cause and the fix, in one line", () => {
    assert.equal(
      stopReasonLine(
        stop("agent_start", "authentication_required", "claude is not logged in: log in once with `claude /login`"),
      ),
      "cannot start the agent: authentication_required — claude is not logged in: log in once with `claude /login`",
    );
  });

  it("the runner's own stop: whose, which and why", () => {
    assert.equal(
      stopReasonLine(stop("runner", "agent_timeout", "no answer")),
      "stop reason     runner: agent_timeout — no answer",
    );
    assert.equal(stopReasonLine(stop("runner", "event_refused")), "stop reason     runner: event_refused");
    assert.equal(stopReasonLine(undefined), null);
  });

  it("a message that quotes a hostile agent shows its escapes instead of playing them", () => {
    const line = stopReasonLine(
      stop("agent_start", "agent_exited_before_initialize", "boom \u001b]0;owned\u0007\u001b[2J\u202e"),
    )!;
    assert.ok(!/[\u0000-\u001f\u007f-\u009f\u202e]/.test(line), JSON.stringify(line));
    assert.match(line, /boom \\x1b\]0;owned\\x07\\x1b\[2J\\u202e$/);
  });
});
