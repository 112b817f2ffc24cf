import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { runDurable } from "../../../src/fault/durable-run.js";
import { loadedScript } from "../../support/scripts.js";
import { within } from "../../support/within.js";
import {
  credentialFaultsScript,
  foundIn,
  plantedSecrets,
  storedCredentialEvents,
  storedObserverRow,
} from "./stored-record.js";

/**
 * A runner killed between a credential change and its ACK, then replaced on the same state:
 * the authority's stored log holds exactly one event per revision, none twice, none lost.
 */
describe("a durable runner restarted between a credential change and its ACK", () => {
  const root = mkdtempSync(join(tmpdir(), "prp-credential-restart-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const script = loadedScript(credentialFaultsScript(root));
  const common = { script, dir: root, credentials: { provider: "codex" }, runnerArgs: ["--harness-ready-ms", "30000"] };

  it("killed right after revision 1 was committed with its baseline, before the outbox had it: the replacement emits revision 1, once", async () => {
    const facts = await within(runDurable({ ...common, crashAt: "after-credential:1" }), 120_000, "the run");
    // The point was reached: the first runner ended by its own SIGKILL, which it sends only there.
    assert.deepEqual(
      facts.runnerExits.map((e) => e.signal ?? e.exitCode),
      ["SIGKILL", 0],
      facts.runnerLogs.flat().join("\n"),
    );
    const stored = storedCredentialEvents(join(facts.dir, "authority"), facts.runId);
    // The replacement has no harness (the fake harness's session dies with it): revision 1 is the last.
    assert.deepEqual(
      stored.map((e) => e.revision),
      [1],
      "revision 1 stored exactly once",
    );
    assert.ok(
      facts.events.some((e) => e.eventType === "runner.reconciled"),
      "a replacement runner delivered it",
    );
    assert.deepEqual(
      storedObserverRow(join(facts.dir, "runner-state"))?.pending,
      null,
      "nothing left pending in the runner's state",
    );
    assert.deepEqual(
      foundIn(join(facts.dir, "authority"), plantedSecrets(root, join(facts.dir, "credentials", "auth.json"))),
      [],
    );
  });

  it("killed after its outbox committed revision 1, while the host had not acknowledged it: the replacement resends it, stored once", async () => {
    let reached = 0;
    const facts = await within(
      runDurable({
        ...common,
        relaunchAfterSigkill: true,
        onCredentialsUpdated: (event, ctx) => {
          if ((event.payload as { revision: number }).revision !== 1 || reached++ > 0) return;
          // Reached: the event is in the authority's commit, not acknowledged. The runner dies now and the commit fails.
          process.kill(ctx.runner().pid, "SIGKILL");
          throw new Error("the host is restarting too");
        },
      }),
      120_000,
      "the run",
    );
    assert.equal(reached >= 2, true, `the callback ran for the first delivery and the resend (${reached})`);
    assert.deepEqual(
      facts.runnerExits.map((e) => e.signal ?? e.exitCode),
      ["SIGKILL", 0],
      facts.runnerLogs.flat().join("\n"),
    );
    const stored = storedCredentialEvents(join(facts.dir, "authority"), facts.runId);
    assert.deepEqual(
      stored.map((e) => e.revision),
      [1],
      "revision 1 stored exactly once",
    );
    const seen = facts.events.filter((e) => e.eventType === "auth.credentials.updated");
    assert.equal(new Set(seen.map((e) => e.sourceEventId)).size, 1, "both deliveries were the same event");
    assert.equal(seen[0]!.sourceEventId, stored[0]!.sourceEventId);
  });
});
