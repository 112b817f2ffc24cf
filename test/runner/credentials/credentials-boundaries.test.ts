import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fakeCredentialFile } from "../../../src/harness/fake-credentials.js";
import { FakeHarnessDriver } from "../../../src/harness/fake-driver.js";
import { SecureAuthority, unqueuedRunner } from "../../security/support.js";
import { ManualTimers } from "../../support/manual-timers.js";
import { loadedScript } from "../../support/scripts.js";
import { within } from "../../support/within.js";

/**
 * The boundary checks of runtime.md §13.1, with the poll's clock frozen and no directory watch,
 * so that only a boundary can see a change: a change during the turn is reported right after the
 * turn's end; a change after it, just before the run's terminal (after the harness exited).
 */
describe("credential checks at the turn's end and before the terminal", () => {
  const root = mkdtempSync(join(tmpdir(), "prp-credential-boundaries-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const happy = loadedScript("happy-path").script;
  const refresh = { kind: "credentials", action: "replace", account: "acct-a", token: "tok-2" };
  const turnEnd = (happy.steps as Array<{ kind: string; event_type?: string }>).findIndex(
    (s) => s.event_type === "turn.completed",
  );
  const cases = [
    { name: "a refresh during the turn follows turn.completed", at: turnEnd, after: "turn.completed" },
    { name: "a refresh after the turn comes just before run.terminal", at: turnEnd + 1, after: "harness.exited" },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      const steps = [...(happy.steps as unknown[])];
      // After the turn's end, wait longer than the runner takes to read it: its turn-end look must come first.
      steps.splice(c.at, 0, ...(c.at > turnEnd ? [{ kind: "delay", milliseconds: 1500 }] : []), refresh);
      const dir = join(root, c.after);
      mkdirSync(dir);
      const scriptPath = join(dir, "script.json");
      writeFileSync(scriptPath, JSON.stringify({ ...happy, name: "boundary", steps }));
      const path = join(dir, "auth.json");
      writeFileSync(path, fakeCredentialFile("acct-a", "tok-1"));
      const authority = await SecureAuthority.start();
      try {
        const identity = await authority.newRun();
        for (const [type, payload] of [
          ["run.prepare", { workspace: "boundary", observeCredentials: true }],
          ["session.open", { reuse: "new_per_run" }],
          ["turn.start", { text: "go", turnId: identity.turnId }],
        ] as const) {
          assert.ok((await authority.server.queueCommand(identity.runId, type, payload)).ok);
        }
        const { runner, log } = await unqueuedRunner(authority, identity, {
          driver: new FakeHarnessDriver({ scriptPath, credentialFile: path }),
          readyTimeoutMs: 30_000,
          credentials: { provider: "codex", path, timers: new ManualTimers(), watch: () => null },
        });
        assert.deepEqual(
          await within(runner.run(), 60_000, "the run"),
          { code: 0, reason: "run_delivered" },
          log.join("\n"),
        );
        const types = (authority.committed.get(identity.runId) ?? []).map((e) => e.eventType);
        assert.equal(types.filter((t) => t === "auth.credentials.updated").length, 1, types.join(","));
        assert.equal(types[types.indexOf("auth.credentials.updated") - 1], c.after, types.join(","));
        assert.equal(types.at(-1), "run.terminal");
      } finally {
        await authority.close();
      }
    });
  }
});
