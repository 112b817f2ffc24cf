import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { STORE_FILE } from "../../src/authority/limits.js";
import { AuthorityServer } from "../../src/authority/server.js";
import { ServerKey } from "../../src/authority/server-key.js";
import {
  ensureServerKeyFile,
  readServerKeyFile,
  SERVER_KEY_ENV,
  serverKeyFromEnvironment,
} from "../../src/authority/server-key-source.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import { StateError } from "../../src/storage/private-sqlite.js";
import { authKey, authKeyDigest } from "../../src/transport/derive.js";
import { authority, connect, openStore, serverKey, tempRoot, unwrap, withRun } from "./support.js";

const refuses = (fn: () => unknown, code: string) =>
  assert.throws(fn, (err: unknown) => err instanceof StateError && err.code === code, code);

/** Run 1 with a live lease and one unused ticket, in a closed store. */
async function storeWithCredentials(
  dir: string,
): Promise<{ ticket: string; ticketId: string; leaseCredentialId: string }> {
  const a = authority(dir);
  await withRun(a);
  await connect(a);
  const ticket = unwrap(await a.credentials.issueBootstrapTicket("run_1", 60_000));
  await a.store.close();
  const lease = rawGet(dir, "SELECT credential_id FROM credentials WHERE kind = 'lease'") as { credential_id: string };
  return { ticket: ticket.token, ticketId: ticket.credentialId, leaseCredentialId: lease.credential_id };
}

function rawGet(dir: string, sql: string, ...params: unknown[]): unknown {
  const raw = new Database(join(dir, STORE_FILE), { readonly: true });
  try {
    return raw.prepare(sql).get(...params);
  } finally {
    raw.close();
  }
}

function rawRun(dir: string, sql: string, ...params: unknown[]): void {
  const raw = new Database(join(dir, STORE_FILE));
  try {
    assert.ok(raw.prepare(sql).run(...params).changes > 0, sql);
  } finally {
    raw.close();
  }
}

const column = (dir: string, credentialId: string): string =>
  (
    rawGet(dir, "SELECT auth_key_digest FROM credentials WHERE credential_id = ?", credentialId) as {
      auth_key_digest: string;
    }
  ).auth_key_digest;

const credentialCount = (dir: string): number =>
  (rawGet(dir, "SELECT COUNT(*) AS n FROM credentials") as { n: number }).n;

/** Whether two keys are the same key: what one seals the other opens. */
const sameKey = (a: ServerKey, b: ServerKey): boolean =>
  b.open(a.seal(Buffer.from("x"), "test", []), "test", []) !== null;

describe("authority store: auth keys sealed under the server key", () => {
  const tmp = tempRoot("prp-authority-server-key-");
  after(tmp.cleanup);

  it("stores each auth key sealed (sealed:v1), in the file neither as hex nor as bytes, and opens it under the same key", async () => {
    const dir = tmp.dir();
    const { ticket, ticketId } = await storeWithCredentials(dir);
    const key = authKey(ticket);
    const plain = authKeyDigest(key);
    const file = readFileSync(join(dir, STORE_FILE));
    assert.match(column(dir, ticketId), /^sealed:v1:[0-9a-f]{24}:[0-9a-f]{64}:[0-9a-f]{32}$/);
    assert.ok(!file.includes(plain.slice(7)) && !file.includes(key), "the auth key is not in the database file");
    key.fill(0);
    const store = openStore(dir);
    assert.equal((await store.credential(ticketId))?.authKeyDigest, plain, "the same server key opens it");
    await store.close();
  });

  it("a wrong server key is refused at open (state_server_key_mismatch), by the store and by AuthorityServer, and nothing is rewritten; no key at all is refused (server_key_missing)", async () => {
    const dir = tmp.dir();
    const { ticketId } = await storeWithCredentials(dir);
    const before = column(dir, ticketId);
    const wrong = ServerKey.generate();
    refuses(() => SqliteAuthorityStore.open(dir, { serverKey: wrong }), "state_server_key_mismatch");
    refuses(
      () =>
        AuthorityServer.open({
          stateDir: dir,
          serverKey: wrong,
          runnerVersion: "0.1.0",
          runnerDigest: `sha256:${"5e".repeat(32)}`,
        }),
      "state_server_key_mismatch",
    );
    assert.equal(column(dir, ticketId), before);
    await openStore(dir).close(); // the right key still opens it

    // No key at all (a caller the types did not reach): refused before the file is touched.
    const none = tmp.dir();
    refuses(() => SqliteAuthorityStore.open(none, {} as never), "server_key_missing");
    refuses(() => SqliteAuthorityStore.open(none, undefined as never), "server_key_missing");
    assert.equal(existsSync(none), false);

    // A store with no credential at all still knows its key.
    const empty = tmp.dir();
    await openStore(empty).close();
    refuses(() => SqliteAuthorityStore.open(empty, { serverKey: wrong }), "state_server_key_mismatch");
  });

  it("a sealed value moved to another row is refused at open (state_credential_invalid); moved back, the store opens", async () => {
    const dir = tmp.dir();
    const { ticketId, leaseCredentialId } = await storeWithCredentials(dir);
    const ticketValue = column(dir, ticketId);
    const leaseValue = column(dir, leaseCredentialId);
    rawRun(dir, "UPDATE credentials SET auth_key_digest = ? WHERE credential_id = ?", ticketValue, leaseCredentialId);
    refuses(() => openStore(dir), "state_credential_invalid");
    rawRun(dir, "UPDATE credentials SET auth_key_digest = ? WHERE credential_id = ?", leaseValue, leaseCredentialId);
    await openStore(dir).close();

    // The row itself moved to another run: its value no longer opens there either.
    const a = authority(dir);
    await withRun(a, 2);
    await a.store.close();
    rawRun(dir, "UPDATE credentials SET run_id = 'run_2' WHERE credential_id = ?", ticketId);
    refuses(() => openStore(dir), "state_credential_invalid");
  });

  it("credentials an earlier version stored unsealed: refused at open (state_credentials_unsealed); adoptServerKey deletes every credential and keeps the runs", async () => {
    const dir = tmp.dir();
    const { ticket, ticketId } = await storeWithCredentials(dir);
    const key = authKey(ticket);
    rawRun(dir, "UPDATE credentials SET auth_key_digest = ? WHERE credential_id = ?", authKeyDigest(key), ticketId);
    key.fill(0);
    refuses(() => openStore(dir), "state_credentials_unsealed");
    assert.equal(credentialCount(dir), 2, "a refusal deletes nothing");
    const store = openStore(dir, { adoptServerKey: true });
    assert.equal(await store.credential(ticketId), undefined, "the exposed ticket is gone");
    assert.equal((await store.run("run_1"))?.connectionCount, 1, "the run is kept");
    await store.close();
    assert.equal(credentialCount(dir), 0, "and the lease with it");
    await openStore(dir).close();
  });

  it("adoptServerKey changes the key: credentials under the old key are deleted and the old key is refused from then on; with the right key it changes nothing", async () => {
    const dir = tmp.dir();
    await storeWithCredentials(dir);
    await openStore(dir, { adoptServerKey: true }).close();
    assert.equal(credentialCount(dir), 2, "the store's own key: nothing deleted");
    const next = ServerKey.generate();
    const store = SqliteAuthorityStore.open(dir, { serverKey: next, adoptServerKey: true });
    await store.close();
    assert.equal(credentialCount(dir), 0);
    refuses(() => openStore(dir), "state_server_key_mismatch");
    await SqliteAuthorityStore.open(dir, { serverKey: next }).close();
  });
});

describe("server key sources: a 600 file or PRP_AUTHORITY_SERVER_KEY, 64 hex digits", () => {
  const tmp = tempRoot("prp-server-key-file-");
  after(tmp.cleanup);

  it("the demo's key file is created 600 with 64 hex digits and read back, never overwritten", () => {
    const path = join(tmp.dir(), "authority-server-key");
    const first = ensureServerKeyFile(path);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.match(readFileSync(path, "utf8"), /^[0-9a-f]{64}\n$/);
    const again = ensureServerKeyFile(path);
    assert.ok(sameKey(first, again), "the second call reads the same key");
    assert.ok(!sameKey(first, ServerKey.generate()), "and another key is told apart");
  });

  it("a key file open to group or others, a symlink, a directory, a missing file or bad contents: each refused with its code", () => {
    const dir = tmp.dir();
    mkdirSync(dir, { mode: 0o700 });
    const good = join(dir, "good");
    writeFileSync(good, `${"ab".repeat(32)}\n`, { mode: 0o600 });
    assert.ok(sameKey(readServerKeyFile(good), ServerKey.fromHex("ab".repeat(32))!));
    for (const mode of [0o644, 0o640, 0o604, 0o660]) {
      chmodSync(good, mode);
      refuses(() => readServerKeyFile(good), "server_key_wrong_mode");
    }
    chmodSync(good, 0o600);
    symlinkSync(good, join(dir, "link"));
    refuses(() => readServerKeyFile(join(dir, "link")), "server_key_symlink");
    refuses(() => readServerKeyFile(dir), "server_key_not_file");
    refuses(() => readServerKeyFile(join(dir, "absent")), "server_key_missing");
    for (const [name, text] of [
      ["short", "ab".repeat(31)],
      ["long", "ab".repeat(33)],
      ["base64", Buffer.alloc(32, 7).toString("base64")],
      ["empty", ""],
    ]) {
      writeFileSync(join(dir, name!), text!, { mode: 0o600 });
      refuses(() => readServerKeyFile(join(dir, name!)), "server_key_invalid");
    }
  });

  it("PRP_AUTHORITY_SERVER_KEY is read once and removed from the environment; unset or malformed is refused", () => {
    const env: NodeJS.ProcessEnv = { [SERVER_KEY_ENV]: "cd".repeat(32), OTHER: "kept" };
    assert.ok(sameKey(serverKeyFromEnvironment(env), ServerKey.fromHex("cd".repeat(32))!));
    assert.deepEqual(env, { OTHER: "kept" });
    refuses(() => serverKeyFromEnvironment(env), "server_key_missing");
    const bad: NodeJS.ProcessEnv = { [SERVER_KEY_ENV]: "not hex" };
    refuses(() => serverKeyFromEnvironment(bad), "server_key_invalid");
    assert.equal(bad[SERVER_KEY_ENV], undefined);
  });

  it("a sealed value opens only unaltered, under its own label and context; each seal draws a fresh IV", () => {
    const sealed = serverKey.seal(Buffer.alloc(32, 1), "test", ["a"]);
    assert.notEqual(serverKey.seal(Buffer.alloc(32, 1), "test", ["a"]), sealed, "a fresh IV every time");
    assert.equal(serverKey.open(sealed, "test", ["b"]), null, "another context does not open it");
    assert.equal(
      serverKey.open(
        sealed.replace(/.$/, (c) => (c === "0" ? "1" : "0")),
        "test",
        ["a"],
      ),
      null,
      "an altered tag does not open it",
    );
    assert.deepEqual(serverKey.open(sealed, "test", ["a"]), Buffer.alloc(32, 1));
  });
});
