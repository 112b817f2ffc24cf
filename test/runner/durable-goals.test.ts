import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { ServerKey } from "../../src/authority/server-key.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import { canonicalJson } from "../../src/contract/canonical-json.js";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import type { RunIdentity } from "../../src/transport/index.js";
import { goalEventProblems, writeGoalScript } from "../support/goal-script.js";
import { queueOpeningCommands, SecureAuthority, unqueuedRunner, until } from "../security/support.js";

const dir = mkdtempSync(join(tmpdir(), "prp-durable-goals-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("a durable runner on a v1 connection refuses a goal command itself", () => {
  it("an authority that sends a command.v2 session.goal.set anyway gets a typed rejection, and the harness never sees it", async () => {
    // The store is opened here, so the test can append what the authority's own queue refuses to build.
    const store = SqliteAuthorityStore.open(join(dir, "authority"), { serverKey: ServerKey.generate() });
    const authority = await SecureAuthority.start({ store });
    try {
      const identity: RunIdentity = {
        runnerInstanceId: "runner_g1",
        environmentLeaseId: "env_g1",
        runId: "run_g1",
        normalizedSessionId: "session_g1",
        turnId: "turn_g1",
        itemId: "item_g1",
      };
      assert.ok((await authority.server.registerRun(identity, { protocolVersion: 1 })).ok);
      await queueOpeningCommands(authority.server, identity);
      const payload = { objective: "Keep the build green" };
      const envelope = {
        schema: "paperclip.prp.command.v2",
        commandId: "command_goal_1",
        controllerSeq: 4,
        type: "session.goal.set",
        issuedAt: new Date().toISOString(),
        payload,
      };
      const appended = await store.appendCommand(
        identity.runId,
        {
          commandId: envelope.commandId,
          controllerSeq: 4,
          type: envelope.type,
          payload: canonicalJson(payload),
          envelope: canonicalJson(envelope),
        },
        Date.now(),
      );
      assert.ok(appended.ok, appended.ok ? "" : appended.error.message);
      // The harness waits for one goal command, then reports item.started: only a goal command that reached it moves it on.
      const driver = new FakeHarnessDriver({ scriptPath: writeGoalScript(dir, 1), delayMs: 0 });
      const { runner } = await unqueuedRunner(authority, identity, { driver, protocolMax: 1, readyTimeoutMs: 30_000 });
      const outcome = runner.run();
      let result: Record<string, unknown> | null = null;
      await until(
        async () => {
          const row = (await store.commands(identity.runId)).find((c) => c.commandId === "command_goal_1");
          result = row?.result ? (JSON.parse(row.result) as Record<string, unknown>) : null;
          return result !== null;
        },
        "the runner's result for the goal command",
        30_000,
      );
      assert.equal(result!.status, "rejected");
      assert.equal((result!.result as { code: string }).code, "envelope_version_too_new");
      assert.equal((result!.result as { logicalEffectCount: number }).logicalEffectCount, 0);
      assert.ok((await authority.server.queueCommand(identity.runId, "run.cancel", {})).ok);
      assert.equal((await outcome).code, 0);
      const events = authority.committed.get(identity.runId) ?? [];
      assert.equal(events.at(-1)?.eventType, "run.terminal");
      assert.equal(
        events.some((e) => e.eventType === "item.started"),
        false,
        "the harness never got the goal command",
      );
      assert.deepEqual(goalEventProblems(events, 1), []);
      assert.equal((await authority.snapshot(identity.runId)).protocolVersion, 1);
    } finally {
      await authority.close();
      await store.close();
    }
  });
});
