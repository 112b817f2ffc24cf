import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import { FakeHarnessDriver } from "../../../src/harness/fake-driver.js";
import { lookAtCredentialFile } from "../../../src/runner/credentials/credential-file.js";
import { LocalRunnerClient } from "../../../src/runner/local-client.js";
import type { RunIdentity } from "../../../src/transport/index.js";
import { SecureAuthority, unqueuedRunner } from "../../security/support.js";
import { PATIENT_HARNESS } from "../../support/scripts.js";
import { until } from "../../support/until.js";
import { within } from "../../support/within.js";
import {
  credentialFaultsScript,
  foundIn,
  plantedSecrets,
  storedCredentialEvents,
  storedObserverRow,
} from "./stored-record.js";

const root = mkdtempSync(join(tmpdir(), "prp-credential-runs-"));
after(() => rmSync(root, { recursive: true, force: true }));
const script = credentialFaultsScript(root);
let n = 0;
const credentialPath = () => join(mkdtempSync(join(root, `home${++n}-`)), "codex-home", "auth.json");

/** A local run of the faults script; its events as the runner wrote them. */
async function localRun(observe: boolean): Promise<{ events: PrpEvent[]; path: string }> {
  const path = credentialPath();
  const events: PrpEvent[] = [];
  const client = new LocalRunnerClient({
    runId: `run_local${n}`,
    sessionId: `session_local${n}`,
    runnerId: `runner_local${n}`,
    scriptPath: script,
    extraArgs: [...PATIENT_HARNESS, "--credential-file", path, "--credential-provider", "codex"],
    onEvent: (e) => events.push(e),
    onReceipt: () => {},
    onBadLine: (l) => assert.fail(`bad line ${l}`),
  });
  try {
    client.send("run.prepare", { workspace: "local", ...(observe ? { observeCredentials: true } : {}) });
    client.send("session.open", { reuse: "new_per_run" });
    client.send("turn.start", { text: "go" });
    await until(
      () => events.some((e) => e.eventType === "run.terminal"),
      () =>
        `run.terminal; events ${events.map((e) => e.eventType).join(",")}; stderr ${client.stderrTail().join(" | ")}`,
      60_000,
    );
  } finally {
    client.close();
    await client.exited();
  }
  return { events, path };
}

const revisions = (events: PrpEvent[]) =>
  events
    .filter((e) => e.eventType === "auth.credentials.updated")
    .map((e) => (e.payload as { revision: number }).revision);

describe("credential observation in a local run (prp-runnerd --local)", () => {
  it("a refresh and an account switch are revisions 1 and 2; the first write, a half write, a deletion, a rewrite and a touch are nothing", async () => {
    const { events, path } = await localRun(true);
    assert.deepEqual(revisions(events), [1, 2], events.map((e) => e.eventType).join(","));
    const updates = events.filter((e) => e.eventType === "auth.credentials.updated");
    for (const e of updates)
      assert.deepEqual(e.payload, {
        schema: "paperclip.auth.credentials.updated.v1",
        provider: "codex",
        bindingId: "harness-auth",
        revision: (e.payload as { revision: number }).revision,
        detection: "credential_store",
      });
    assert.ok(updates.every((e) => e.priority === 0 && e.normalizedSessionId === "session_local1"));
    const text = JSON.stringify(events);
    assert.deepEqual(
      plantedSecrets(root, path).filter((s) => text.includes(s)),
      [],
      "no token, account, path or fingerprint in any event",
    );
    assert.ok(
      events.findIndex((e) => e.eventType === "auth.credentials.updated") <
        events.findIndex((e) => e.eventType === "run.terminal"),
    );
  });

  it("a host that does not opt in receives no event from the same harness (the twin)", async () => {
    const { events, path } = await localRun(false);
    assert.equal(lookAtCredentialFile(path).kind, "valid", "the harness did change its file");
    assert.deepEqual(revisions(events), []);
  });
});

describe("credential observation in a durable run (authority's record)", () => {
  async function durableRun(
    authority: SecureAuthority,
    observe: boolean,
  ): Promise<{ identity: RunIdentity; stateDir: string; path: string; log: string[] }> {
    const identity = await authority.newRun();
    const path = credentialPath();
    for (const [type, payload] of [
      ["run.prepare", { workspace: "credentials", ...(observe ? { observeCredentials: true } : {}) }],
      ["session.open", { reuse: "new_per_run" }],
      ["turn.start", { text: "go", turnId: identity.turnId }],
    ] as const) {
      const queued = await authority.server.queueCommand(identity.runId, type, payload);
      assert.ok(queued.ok);
    }
    const { runner, log, stateDir } = await unqueuedRunner(authority, identity, {
      driver: new FakeHarnessDriver({ scriptPath: script, credentialFile: path }),
      readyTimeoutMs: 30_000,
      credentials: { provider: "codex", path },
    });
    assert.deepEqual(
      await within(runner.run(), 90_000, "the run"),
      { code: 0, reason: "run_delivered" },
      log.join("\n"),
    );
    return { identity, stateDir, path, log };
  }

  it("each revision is stored once; a failing onCredentialsUpdated leaves it unacknowledged, and its resend keeps its identity", async () => {
    const calls: Array<{ sourceEventId: string; revision: number }> = [];
    const authority = await SecureAuthority.start({
      onCredentialsUpdated: (event) => {
        const revision = (event.payload as { revision: number }).revision;
        calls.push({ sourceEventId: event.sourceEventId, revision });
        if (revision === 1 && calls.length === 1) throw new Error("the host's credential ledger is locked");
      },
    });
    try {
      const { identity, stateDir, path, log } = await durableRun(authority, true);
      const stored = storedCredentialEvents(join(authority.root, "authority"), identity.runId);
      assert.deepEqual(
        stored.map((e) => e.revision),
        [1, 2],
        "exactly one stored event per revision",
      );
      assert.deepEqual(
        calls.map((c) => c.revision),
        [1, 1, 2],
        "refused once, then called again for the resend",
      );
      assert.equal(calls[0]!.sourceEventId, calls[1]!.sourceEventId, "the resend is the same event");
      assert.equal(calls[1]!.sourceEventId, stored[0]!.sourceEventId);
      assert.ok(
        log.some((l) => l.includes("callback_failed")),
        `the runner saw its event refused: ${log.join(" | ")}`,
      );
      // The runner's state on disk: revision 2 committed with its baseline, nothing pending.
      assert.deepEqual(storedObserverRow(stateDir), {
        bindingId: "harness-auth",
        revision: 2,
        baseline: (lookAtCredentialFile(path) as { fingerprint: string }).fingerprint,
        pending: null,
      });
      const secrets = plantedSecrets(root, path);
      assert.deepEqual(
        foundIn(join(authority.root, "authority"), secrets),
        [],
        "the authority stored no token, account, path or fingerprint",
      );
      assert.deepEqual(
        foundIn(
          stateDir,
          secrets.filter((s) => s.startsWith("fake-access-token") || s.startsWith("acct-")),
        ),
        [],
        "nor did the runner's state",
      );
      // The scan's twin: it does find what the authority stored.
      assert.deepEqual(foundIn(join(authority.root, "authority"), ["harness-auth", stored[1]!.sourceEventId]), [
        "harness-auth",
        stored[1]!.sourceEventId,
      ]);
    } finally {
      await authority.close();
    }
  });

  it("without the opt-in, the same run stores no credential event and calls no callback (the twin)", async () => {
    let called = 0;
    const authority = await SecureAuthority.start({ onCredentialsUpdated: () => void called++ });
    try {
      const { identity, stateDir, path } = await durableRun(authority, false);
      assert.equal(lookAtCredentialFile(path).kind, "valid", "the harness did change its file");
      assert.deepEqual(storedCredentialEvents(join(authority.root, "authority"), identity.runId), []);
      assert.equal(called, 0);
      assert.equal(storedObserverRow(stateDir), undefined, "nothing observed, nothing kept");
    } finally {
      await authority.close();
    }
  });
});
