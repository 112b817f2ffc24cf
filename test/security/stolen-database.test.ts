import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { STORE_FILE } from "../../src/authority/limits.js";
import {
  Opener,
  RunnerHandshake,
  authKey,
  canonicalChallenge,
  clientProof,
  credentialId,
  handshakeEnvelope,
  serverProof,
  sessionKeys,
  type AuthChallenge,
  type RunIdentity,
  type WelcomePayload,
} from "../../src/transport/index.js";
import {
  BUILD,
  HandRunner,
  SecureAuthority,
  assertCompleted,
  durableRunner,
  realRunner,
  refusalOf,
} from "./support.js";

/** What an attacker reads from a copy of the authority's database: one credential row and its run's identity. */
interface StolenRow {
  credentialId: string;
  kind: "bootstrap" | "lease";
  column: string;
  identity: RunIdentity;
}

/**
 * Read access to the database file and nothing else: the files are copied (the main file and
 * its WAL, as a backup or a read-only mount would give them) and the copy is opened read-only.
 */
function stealRow(authority: SecureAuthority, runId: string, kind: "bootstrap" | "lease"): StolenRow {
  const loot = mkdtempSync(join(tmpdir(), "prp-stolen-"));
  try {
    for (const suffix of ["", "-wal"]) {
      const from = join(authority.root, "authority", `${STORE_FILE}${suffix}`);
      if (existsSync(from)) copyFileSync(from, join(loot, `${STORE_FILE}${suffix}`));
    }
    const db = new Database(join(loot, STORE_FILE), { readonly: true });
    try {
      const row = db
        .prepare("SELECT * FROM credentials WHERE run_id = ? AND kind = ? AND used_at IS NULL AND revoked_at IS NULL")
        .get(runId, kind) as Record<string, string> | undefined;
      assert.ok(row, `the copy holds the run's unused ${kind}`);
      const run = db.prepare("SELECT * FROM runs WHERE run_id = ?").get(runId) as Record<string, string>;
      return {
        credentialId: row.credential_id!,
        kind,
        column: row.auth_key_digest!,
        identity: {
          runnerInstanceId: run.runner_instance_id!,
          environmentLeaseId: run.environment_lease_id!,
          runId: run.run_id!,
          normalizedSessionId: run.normalized_session_id!,
          turnId: run.turn_id!,
          itemId: run.item_id!,
        },
      };
    } finally {
      db.close();
    }
  } finally {
    rmSync(loot, { recursive: true, force: true });
  }
}

/** Every 32-byte value spelled as 64 hex digits in the stolen column: the HMAC key, if it is stored as itself. */
const keyCandidates = (column: string): Buffer[] =>
  (column.match(/(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])/g) ?? []).map((hex) => Buffer.from(hex, "hex"));

/**
 * The attacker's handshake (§5.3) with a candidate key and the stolen credential id: no token,
 * only what the row gave. Resolves with the welcome if the authority let it in, or the close.
 */
async function impersonate(
  authority: SecureAuthority,
  stolen: StolenRow,
  key: Buffer,
): Promise<{ welcome: WelcomePayload } | { closed: string }> {
  const runner = await HandRunner.dial(authority.url(stolen.identity.runId), stolen.identity);
  try {
    // A handshake object only for the hello's shape; its token is a stranger's and is never used.
    const shape = new RunnerHandshake({
      credential: { kind: "bootstrap", token: `bootstrap_${randomUUID()}` },
      identity: stolen.identity,
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      resume: { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 },
    });
    shape.destroy();
    const hello = { ...shape.hello, credentialId: stolen.credentialId, credentialKind: stolen.kind };
    runner.sendJson(handshakeEnvelope("auth_hello", { ...hello }));
    const first = await Promise.race([runner.messages.next(), runner.closed().then((c) => ({ closed: c.reason }))]);
    if (typeof first !== "string") return first;
    const challenge = JSON.parse(first).payload as AuthChallenge;
    const canonical = canonicalChallenge(challenge);
    const proof = clientProof(key, canonical, challenge.serverProof);
    runner.sendJson(
      handshakeEnvelope("auth_response", {
        credentialId: stolen.credentialId,
        clientNonce: hello.clientNonce,
        serverNonce: challenge.serverNonce,
        clientProof: proof,
      }),
    );
    const next = await Promise.race([runner.messages.next(), runner.closed().then((c) => ({ closed: c.reason }))]);
    if (typeof next !== "string") return next;
    const keys = sessionKeys(key, canonical, challenge.serverProof, proof);
    const opened = new Opener(keys.coreToClient, keys.sessionId, "core_to_client").open(next);
    assert.ok(opened.ok, "a sealed frame after the response is the welcome");
    assert.equal(serverProof(key, canonical), challenge.serverProof, "the stolen key also forges the server's proof");
    return { welcome: JSON.parse(opened.value).payload as WelcomePayload };
  } finally {
    runner.close();
    await runner.closed();
  }
}

/** Tries every key the stolen column offers; asserts it tried at least one and that none got in. */
async function assertStolenRowOpensNothing(authority: SecureAuthority, stolen: StolenRow): Promise<void> {
  const candidates = keyCandidates(stolen.column);
  assert.ok(candidates.length > 0, `the attacker found key material to try in ${stolen.column.slice(0, 12)}…`);
  for (const key of candidates) {
    const outcome = await impersonate(authority, stolen, key);
    assert.ok(
      "closed" in outcome,
      "welcome" in outcome
        ? `the database copy alone authenticated as the runner with its ${stolen.kind}: lease ${outcome.welcome.connectionLeaseId}, ${outcome.welcome.pendingCommands.length} pending command(s)`
        : "",
    );
    assert.equal(outcome.closed, "proof_mismatch", `the ${stolen.kind} was found and the proof refused`);
  }
}

/**
 * Issue 9 item 9: credentials at rest. Read-only access to the authority's database file must
 * not be enough to authenticate: not with an unused ticket (which would take a fresh lease and
 * the pending command, and spend the real runner's ticket), and not with a live lease.
 */
describe("security: a copy of the authority's database authenticates nothing", () => {
  let authority: SecureAuthority;
  before(async () => {
    authority = await SecureAuthority.start();
  });
  after(async () => {
    await authority.close();
  });

  it("the attacker's handshake is not vacuous: given the key an unsealed column held (sha256:<hex(authKey)>), it gets a lease and the pending command", async () => {
    const run = await authority.newRun();
    assert.ok((await authority.server.queueCommand(run.runId, "run.prepare", { workspace: "stolen" })).ok);
    const ticket = await authority.ticket(run.runId, 30_000);
    const key = authKey(ticket);
    const outcome = await impersonate(authority, stealRow(authority, run.runId, "bootstrap"), key);
    key.fill(0);
    assert.ok("welcome" in outcome, `the handshake with the right key was refused: ${JSON.stringify(outcome)}`);
    assert.equal(outcome.welcome.pendingCommands.length, 1);
    assert.equal(await authority.ticketUnused(ticket), false, "and it spent the runner's ticket");
  });

  it("an unused ticket and a live lease read from the file are refused; the real runner's ticket stays unused and then runs the whole run", async () => {
    const run = await authority.newRun();
    const ticket = await authority.ticket(run.runId, 30_000);
    // Queues the opening commands. The harness may start slowly on a loaded machine: this test is about credentials.
    const { runner, log } = await durableRunner(authority, run, { bootstrapToken: ticket, readyTimeoutMs: 30_000 });

    await assertStolenRowOpensNothing(authority, stealRow(authority, run.runId, "bootstrap"));
    assert.ok(await authority.ticketUnused(ticket), "the real runner's ticket is not spent");
    const command = (await authority.server.commands.commands(run.runId))[0]!;
    assert.equal(command.deliveryCount, 0, "the pending command went to nobody");

    // The real runner spends its ticket; its lease is now in the file, live for 60 s.
    const outcome = await runner.run();
    await assertCompleted(authority, run, { outcome, events: authority.committed.get(run.runId) ?? [], log });
    const before = await authority.snapshot(run.runId);
    await assertStolenRowOpensNothing(authority, stealRow(authority, run.runId, "lease"));
    assert.equal(
      (await authority.snapshot(run.runId)).connectionCount,
      before.connectionCount,
      "no connection was authorized with the stolen lease",
    );
  });
});

describe("security: write access to the authority's database cannot move a credential to another run", () => {
  let authority: SecureAuthority;
  before(async () => {
    authority = await SecureAuthority.start();
  });
  after(async () => {
    await authority.close();
  });

  it("a ticket of run A whose row is moved to run B is refused on B; moved back, it works on A", async () => {
    const a = await authority.newRun();
    const b = await authority.newRun();
    const ticketA = await authority.ticket(a.runId, 30_000);
    const ticketB = await authority.ticket(b.runId, 30_000);
    const db = new Database(join(authority.root, "authority", STORE_FILE));
    const move = (runId: string) =>
      assert.equal(
        db.prepare("UPDATE credentials SET run_id = ? WHERE credential_id = ?").run(runId, credentialId(ticketA))
          .changes,
        1,
      );
    try {
      move(b.runId);
      const refused = await realRunner(authority.url(b.runId), b, { kind: "bootstrap", token: ticketA });
      assert.equal(refusalOf(refused)?.peerCode, "handler_failed", JSON.stringify(refusalOf(refused)));
      assert.match(
        (await authority.diagnosed(b.runId, "handler_failed")).message,
        /state_credential_invalid: .*does not open in this row/,
      );
      assert.equal((await authority.snapshot(b.runId)).connectionCount, 0, "nothing was authorized on run B");
      assert.ok(await authority.ticketUnused(ticketB), "run B's own ticket is untouched");

      move(a.runId);
      const accepted = await realRunner(authority.url(a.runId), a, { kind: "bootstrap", token: ticketA });
      assert.ok(accepted.ok, "in its own row the ticket opens");
      accepted.value.close();
    } finally {
      db.close();
    }
  });
});
