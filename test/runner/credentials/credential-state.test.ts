import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { RunnerState, STATE_FILE, type StateBinding } from "../../../src/runner/durable/runner-state.js";
import { outboxSink } from "../../../src/runner/durable/outbox-sink.js";
import { credentialsUpdated } from "../../../src/runner/credentials/credentials-event.js";
import { StateError } from "../../../src/storage/private-sqlite.js";
import { storedObserverRow } from "./stored-record.js";

const binding: StateBinding = {
  runnerInstanceId: "runner_1",
  environmentLeaseId: "env_1",
  runId: "run_1",
  normalizedSessionId: "session_1",
  turnId: "turn_1",
  itemId: "item_1",
  maxOutboxBytes: 16 * 1024 * 1024,
  p0ReserveBytes: 1024 * 1024,
};
const FINGERPRINT = "ab".repeat(32);

/** The credential_observer rows of the runner's state (runtime.md §5.7), read from the file on disk. */
describe("the credential observer's durable state", () => {
  const root = mkdtempSync(join(tmpdir(), "prp-credential-state-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  const dir = () => join(root, `state-${++n}`);

  it("baseline, revision and pending are on disk together, survive a reopen, and the outbox's admission clears pending in its own transaction", () => {
    const d = dir();
    const state = RunnerState.open(d, binding);
    state.credentials.optIn("harness-auth", "codex");
    state.credentials.record("harness-auth", { baseline: FINGERPRINT, revision: 3, pending: 3 });
    assert.deepEqual(storedObserverRow(d), {
      bindingId: "harness-auth",
      revision: 3,
      baseline: FINGERPRINT,
      pending: 3,
    });
    state.close();
    const reopened = RunnerState.open(d, binding);
    assert.deepEqual(
      reopened.credentials.load("harness-auth"),
      { provider: "codex", revision: 3, baseline: FINGERPRINT, pending: 3 },
      "a restarted runner finds it",
    );
    const sink = outboxSink(
      reopened,
      { ...binding },
      {
        send: () => {},
        unrecoverable: () => assert.fail("unrecoverable"),
        backpressure: () => {},
        waitForRoom: () => {},
      },
    );
    assert.equal(
      sink.offer({
        eventType: "auth.credentials.updated",
        payload: { ...credentialsUpdated("codex", "harness-auth", 3) },
      }).kind,
      "admitted",
    );
    const raw = new Database(join(d, STATE_FILE), { readonly: true });
    const row = raw.prepare("SELECT envelope FROM outbox WHERE event_type = 'auth.credentials.updated'").get() as {
      envelope: string;
    };
    raw.close();
    assert.equal((JSON.parse(row.envelope) as { payload: { revision: number } }).payload.revision, 3);
    assert.equal(storedObserverRow(d)?.pending, null, "admitted: no longer pending");
    reopened.close();
  });

  it("a row that cannot be believed fails the state closed at open (and a sound one opens: the twin)", () => {
    for (const [what, sql, code] of [
      [
        "a pending revision other than the binding's",
        "UPDATE credential_observer SET pending = 2",
        "state_credential_observer",
      ],
      [
        "a baseline that is no fingerprint",
        "UPDATE credential_observer SET baseline = 'acct-1 tok-1'",
        "state_credential_observer",
      ],
      ["nothing wrong", "SELECT 1", null],
    ] as const) {
      const d = dir();
      const state = RunnerState.open(d, binding);
      state.credentials.optIn("harness-auth", "codex");
      state.credentials.record("harness-auth", { baseline: FINGERPRINT, revision: 3, pending: 3 });
      state.close();
      const raw = new Database(join(d, STATE_FILE));
      raw.prepare(sql).run();
      raw.close();
      if (code === null) RunnerState.open(d, binding).close();
      else
        assert.throws(
          () => RunnerState.open(d, binding),
          (err: unknown) => err instanceof StateError && err.code === code,
          what,
        );
    }
  });
});
