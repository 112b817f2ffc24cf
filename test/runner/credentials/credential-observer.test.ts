import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fakeCredentialFile } from "../../../src/harness/fake-credentials.js";
import { lookAtCredentialFile } from "../../../src/runner/credentials/credential-file.js";
import {
  CredentialObserver,
  CREDENTIAL_POLL_MS,
  watchDirectory,
} from "../../../src/runner/credentials/credential-observer.js";
import { memoryCredentialStore, type CredentialStore } from "../../../src/runner/credentials/credential-store.js";
import type { CredentialsUpdatedPayload } from "../../../src/runner/credentials/credentials-event.js";
import { ManualTimers } from "../../support/manual-timers.js";
import { until } from "../../support/until.js";

const root = mkdtempSync(join(tmpdir(), "prp-credobs-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** An observer of a fresh file, polled by a manual clock and with no directory watch unless asked. */
function observed(options: { watch?: boolean; store?: CredentialStore; path?: string } = {}) {
  const path = options.path ?? join(mkdtempSync(join(root, `case${++n}-`)), "auth.json");
  const timers = new ManualTimers();
  const emitted: CredentialsUpdatedPayload[] = [];
  const store = options.store ?? memoryCredentialStore();
  const observer = new CredentialObserver({
    provider: "codex",
    path,
    store,
    timers,
    ...(options.watch ? {} : { watch: () => null }),
    emit: (p) => emitted.push(p),
  });
  /** Writes the file and lets the poll look. */
  const write = (account: string, token: string) => {
    writeFileSync(path, fakeCredentialFile(account, token));
    timers.advance(CREDENTIAL_POLL_MS);
  };
  const revisions = () => emitted.map((p) => p.revision);
  return {
    path,
    timers,
    emitted,
    store,
    observer,
    write,
    revisions,
    admitAll: () => emitted.forEach((p) => store.admitted(p.bindingId, p.revision)),
  };
}

describe("the credential file", () => {
  it("is valid only as a whole, non-empty JSON object; its fingerprint ignores key order and spacing", () => {
    const dir = mkdtempSync(join(root, "file-"));
    const path = join(dir, "auth.json");
    assert.deepEqual(lookAtCredentialFile(path), { kind: "unreadable" }, "absent");
    const whole = fakeCredentialFile("acct-1", "tok-1");
    for (let cut = 1; cut < whole.trimEnd().length; cut++) {
      writeFileSync(path, whole.slice(0, cut));
      assert.equal(lookAtCredentialFile(path).kind, "unreadable", `a write cut at ${cut} bytes`);
    }
    for (const other of ["[]", "{}", '"tok"', "null"]) {
      writeFileSync(path, other);
      assert.equal(lookAtCredentialFile(path).kind, "unreadable", other);
    }
    writeFileSync(path, whole);
    const a = lookAtCredentialFile(path);
    writeFileSync(
      path,
      JSON.stringify({
        tokens: { account_id: "acct-1", refresh_token: "tok-1-refresh", access_token: "tok-1" },
        auth_mode: "chatgpt",
      }),
    );
    assert.equal(a.kind, "valid");
    assert.deepEqual(lookAtCredentialFile(path), a, "the same content, reordered");
    writeFileSync(path, fakeCredentialFile("acct-2", "tok-1"));
    assert.notDeepEqual(lookAtCredentialFile(path), a, "another account");
  });
});

describe("the credential observer (runtime.md §13.1)", () => {
  it("a first valid file is the baseline and claims nothing; a refresh and an account switch are revisions 1 and 2", () => {
    const o = observed();
    o.observer.start();
    o.write("acct-a", "tok-1");
    assert.deepEqual(o.emitted, [], "the first file is only the baseline");
    o.write("acct-a", "tok-2");
    o.admitAll();
    o.write("acct-b", "tok-2");
    assert.deepEqual(o.emitted, [
      {
        schema: "paperclip.auth.credentials.updated.v1",
        provider: "codex",
        bindingId: "harness-auth",
        revision: 1,
        detection: "credential_store",
      },
      {
        schema: "paperclip.auth.credentials.updated.v1",
        provider: "codex",
        bindingId: "harness-auth",
        revision: 2,
        detection: "credential_store",
      },
    ]);
    o.observer.stop();
  });

  it("a file present at start is the baseline", () => {
    const o = observed();
    writeFileSync(o.path, fakeCredentialFile("acct-a", "tok-1"));
    o.observer.start();
    o.timers.advance(CREDENTIAL_POLL_MS * 3);
    assert.deepEqual(o.emitted, []);
    o.write("acct-a", "tok-2");
    assert.deepEqual(o.revisions(), [1]);
    o.observer.stop();
  });

  it("partial writes, deletion, a rewrite of the same content and metadata changes emit nothing", () => {
    const o = observed();
    o.observer.start();
    o.write("acct-a", "tok-1");
    const whole = fakeCredentialFile("acct-a", "tok-2");
    writeFileSync(o.path, whole.slice(0, whole.length / 2));
    o.timers.advance(CREDENTIAL_POLL_MS);
    rmSync(o.path);
    o.timers.advance(CREDENTIAL_POLL_MS);
    o.write("acct-a", "tok-1"); // back, as it was
    writeFileSync(o.path, JSON.stringify(JSON.parse(fakeCredentialFile("acct-a", "tok-1")))); // other spacing
    chmodSync(o.path, 0o644);
    utimesSync(o.path, new Date(0), new Date(0));
    o.timers.advance(CREDENTIAL_POLL_MS);
    assert.deepEqual(o.emitted, []);
    // The must-fail twin: the same observer does see a real change.
    o.write("acct-a", "tok-2");
    assert.deepEqual(o.revisions(), [1]);
    o.observer.stop();
  });

  it("an atomic replacement (a temporary file renamed over it) is a revision", () => {
    const o = observed();
    o.observer.start();
    o.write("acct-a", "tok-1");
    const temp = join(o.path, "..", ".auth.json.tmp");
    writeFileSync(temp, fakeCredentialFile("acct-a", "tok-2"));
    renameSync(temp, o.path);
    o.timers.advance(CREDENTIAL_POLL_MS);
    assert.deepEqual(o.revisions(), [1]);
    o.observer.stop();
  });

  it("the poll looks once a second: a change is not seen before, and is seen at, the next tick", () => {
    const o = observed();
    o.observer.start();
    o.write("acct-a", "tok-1");
    writeFileSync(o.path, fakeCredentialFile("acct-a", "tok-2"));
    o.timers.advance(CREDENTIAL_POLL_MS - 1);
    assert.deepEqual(o.emitted, [], "not before the tick");
    o.timers.advance(1);
    assert.deepEqual(o.revisions(), [1], "at the tick");
    o.observer.stop();
    writeFileSync(o.path, fakeCredentialFile("acct-a", "tok-3"));
    o.timers.advance(CREDENTIAL_POLL_MS * 5);
    assert.deepEqual(o.revisions(), [1], "a stopped observer looks no more");
    assert.equal(o.timers.waiting, 0, "and keeps no timer");
  });

  it("the directory watch sees an atomic replacement with the poll's clock frozen", async () => {
    const o = observed({ watch: true });
    writeFileSync(o.path, fakeCredentialFile("acct-a", "tok-1"));
    o.observer.start();
    const temp = join(o.path, "..", ".auth.json.tmp");
    writeFileSync(temp, fakeCredentialFile("acct-a", "tok-2"));
    renameSync(temp, o.path);
    await until(() => o.emitted.length === 1, "the watch to report the replacement");
    o.observer.stop();
  });

  it("a missing directory is no failure: the poll finds the file once it appears", () => {
    const dir = join(root, `later-${++n}`);
    const o = observed({ watch: true, path: join(dir, "auth.json") });
    assert.equal(
      watchDirectory(dir, () => {}),
      null,
      "no directory to watch",
    );
    o.observer.start();
    o.timers.advance(CREDENTIAL_POLL_MS);
    mkdirSync(dir);
    o.write("acct-a", "tok-1");
    o.write("acct-a", "tok-2");
    assert.deepEqual(o.revisions(), [1]);
    o.observer.stop();
  });

  it("an event not yet admitted keeps its identity: later changes coalesce into it, and a new observer on the same store emits it again", () => {
    const store = memoryCredentialStore();
    const first = observed({ store });
    first.observer.start();
    first.write("acct-a", "tok-1");
    first.write("acct-a", "tok-2");
    first.write("acct-a", "tok-3"); // while revision 1 is still pending
    assert.deepEqual(first.revisions(), [1]);
    first.observer.stop();
    const second = observed({ store, path: first.path });
    second.observer.start();
    assert.deepEqual(second.revisions(), [1], "the pending revision again, not a new one");
    second.admitAll();
    second.write("acct-a", "tok-3");
    assert.deepEqual(second.revisions(), [1], "tok-3 was already the baseline");
    second.write("acct-a", "tok-4");
    assert.deepEqual(second.revisions(), [1, 2]);
    second.observer.stop();
  });

  it("the event carries exactly schema, provider, bindingId, revision and detection", () => {
    const o = observed();
    o.observer.start();
    o.write("acct-secret-account", "tok-secret-1");
    o.write("acct-secret-account", "tok-secret-2");
    assert.deepEqual(Object.keys(o.emitted[0]!).sort(), ["bindingId", "detection", "provider", "revision", "schema"]);
    const text = JSON.stringify(o.emitted);
    for (const secret of [
      "tok-secret",
      "acct-secret-account",
      o.path,
      (lookAtCredentialFile(o.path) as { fingerprint: string }).fingerprint,
    ])
      assert.ok(!text.includes(secret), `no ${secret}`);
    o.observer.stop();
  });
});
