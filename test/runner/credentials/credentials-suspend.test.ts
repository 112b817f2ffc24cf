import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fakeCredentialFile } from "../../../src/harness/fake-credentials.js";
import { FakeHarnessDriver } from "../../../src/harness/fake-driver.js";
import { resolveScriptPath } from "../../../src/harness/script-file.js";
import { SecureAuthority, unqueuedRunner, until } from "../../security/support.js";
import { ManualTimers } from "../../support/manual-timers.js";
import { within } from "../../support/within.js";
import { storedCredentialEvents } from "./stored-record.js";

/**
 * runtime.md §13.1: what the runner observed is in the outbox before runner.suspend completes.
 * The poll's clock is frozen and the directory is not watched, so only the boundary check can see
 * the change; the twin suspends with no change and must store no credential event.
 */
describe("a credential change observed at runner.suspend", () => {
  const root = mkdtempSync(join(tmpdir(), "prp-credential-suspend-"));
  after(() => rmSync(root, { recursive: true, force: true }));

  for (const changed of [true, false]) {
    it(changed ? "is committed before runner.suspended" : "no change, no event (the twin)", async () => {
      const authority = await SecureAuthority.start();
      try {
        const identity = await authority.newRun();
        const path = join(root, identity.runId, "auth.json");
        mkdirSync(join(root, identity.runId));
        writeFileSync(path, fakeCredentialFile("acct-a", "tok-1"));
        for (const [type, payload] of [
          ["run.prepare", { workspace: "suspend", observeCredentials: true }],
          ["session.open", { reuse: "new_per_run" }],
          ["turn.start", { text: "go", turnId: identity.turnId }],
        ] as const) {
          assert.ok((await authority.server.queueCommand(identity.runId, type, payload)).ok);
        }
        const { runner, log } = await unqueuedRunner(authority, identity, {
          driver: new FakeHarnessDriver({ scriptPath: resolveScriptPath("interrupted"), delayMs: 0 }),
          readyTimeoutMs: 30_000,
          credentials: { provider: "codex", path, timers: new ManualTimers(), watch: () => null },
        });
        const running = runner.run();
        const committed = () => authority.committed.get(identity.runId) ?? [];
        await until(
          () =>
            committed().some(
              (e) =>
                e.eventType === "runtime.phase.changed" &&
                (e.payload as { phase?: string }).phase === "awaiting_interrupt",
            ),
          "the turn to wait",
          30_000,
        );
        if (changed) writeFileSync(path, fakeCredentialFile("acct-a", "tok-2"));
        assert.ok((await authority.server.queueCommand(identity.runId, "runner.suspend", {})).ok);
        assert.deepEqual(
          await within(running, 60_000, "the suspend"),
          { code: 0, reason: "suspended" },
          log.join("\n"),
        );
        const types = committed().map((e) => e.eventType);
        const stored = storedCredentialEvents(join(authority.root, "authority"), identity.runId);
        assert.deepEqual(
          stored.map((e) => e.revision),
          changed ? [1] : [],
          types.join(","),
        );
        if (changed)
          assert.ok(
            stored[0]!.sourceSeq < committed().find((e) => e.eventType === "runner.suspended")!.sourceSeq,
            types.join(","),
          );
      } finally {
        await authority.close();
      }
    });
  }
});
