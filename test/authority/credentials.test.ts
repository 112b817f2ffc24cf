import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { Credentials } from "../../src/authority/credentials.js";
import { coreChannelHooks } from "../../src/authority/handshake-hooks.js";
import { STORE_FILE } from "../../src/authority/limits.js";
import { credentialId as credentialOf } from "../../src/transport/derive.js";
import { controlEnvelope, type Payload } from "../../src/transport/envelope.js";
import type { Result as TransportResult } from "../../src/transport/errors.js";
import {
  RunnerHandshake,
  ServerHandshake,
  type LeaseGrant,
  type RunExpectation,
  type RunnerCredential,
  type RunnerLease,
} from "../../src/transport/handshake.js";
import { parseHello } from "../../src/transport/handshake-payloads.js";
import { authority, codeOf, identity, tempRoot, unwrap, withRun, type Authority } from "./support.js";

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const EXPECTED: RunExpectation = {
  identity: identity(),
  runnerVersion: "0.1.0",
  runnerDigest: `sha256:${"ab".repeat(32)}`,
  range: { min: 1, max: 3 },
};
const RESUME = { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 };

const tvalue = <T>(r: TransportResult<T>): T => {
  assert.ok(r.ok, r.ok ? "" : `${r.error.code} ${r.error.path}: ${r.error.message}`);
  return r.value;
};

/**
 * One handshake through src/transport's real state machines, with this authority's lookup and
 * authorize hooks: hello, challenge, response (its proof optionally spoilt), verify, authorize,
 * welcome. Returns the transport's refusal code or the runner's accepted lease.
 */
async function handshake(
  a: Authority,
  credential: RunnerCredential,
  spoilProof = false,
): Promise<{ refused: string } | { lease: RunnerLease; grant: LeaseGrant }> {
  const hooks = coreChannelHooks(a.credentials, a.commands);
  const runner = new RunnerHandshake({
    credential,
    identity: identity(),
    runnerVersion: EXPECTED.runnerVersion,
    runnerDigest: EXPECTED.runnerDigest,
    resume: RESUME,
  });
  const hello = tvalue(parseHello({ ...runner.hello }));
  const record = await hooks.lookupCredential(hello.credentialId);
  const challenged = ServerHandshake.challenge(hello, record, EXPECTED, a.clock.now());
  if (!challenged.ok) return { refused: challenged.error.code };
  const server = challenged.value;
  const answered = tvalue(runner.answer({ ...server.challenge }, a.clock.now()));
  const response: Payload = { ...answered.response, ...(spoilProof ? { clientProof: "00".repeat(32) } : {}) };
  const verified = server.verify(response, a.clock.now());
  if (!verified.ok) return { refused: verified.error.code };
  const granted = await hooks.authorize({
    hello,
    record: server.record,
    challenge: server.challenge,
    sessionId: verified.value.keys.sessionId,
  });
  if (!granted.ok) return { refused: granted.error.code };
  const grant = granted.value;
  const binding = {
    identity: identity(),
    connectionId: grant.connectionId,
    connectionLeaseId: grant.connectionLeaseId,
    leaseExpiresAtUnixMs: grant.connectionLeaseExpiresAtUnixMs,
  };
  const welcome = controlEnvelope(
    "welcome",
    binding,
    { ...server.welcome(grant) },
    "envelope-1",
    new Date(a.clock.now()).toISOString(),
  );
  return { lease: tvalue(runner.acceptWelcome(welcome, a.clock.now())).lease, grant };
}

const refusedCode = (r: { refused: string } | { lease: RunnerLease }): string => ("refused" in r ? r.refused : "ok");

describe("authority credentials: bootstrap tickets and leases", () => {
  const tmp = tempRoot("prp-authority-credentials-");
  after(tmp.cleanup);

  it("issues bootstrap_<uuid> with a 5 s default TTL and refuses TTLs outside 1–60 s", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    const t = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
    assert.match(t.token, new RegExp(`^bootstrap_${UUID}$`));
    assert.match(t.credentialId, /^sha256:[0-9a-f]{64}$/);
    assert.equal(t.expiresAtUnixMs, a.clock.now() + 5_000);
    for (const ttl of [999, 60_001, 0, -1, 1.5, Number.NaN])
      assert.equal(codeOf(await a.credentials.issueBootstrapTicket("run_1", ttl)), "ttl_out_of_range", String(ttl));
    for (const ttl of [1_000, 60_000])
      assert.ok((await a.credentials.issueBootstrapTicket("run_1", ttl)).ok, String(ttl));
    assert.equal(codeOf(await a.credentials.issueBootstrapTicket("run_9")), "unknown_run");
    for (const ttl of [59_999, 24 * 3_600_000 + 1])
      assert.equal(codeOf(Credentials.create({ store: a.store, leaseTtlMs: ttl })), "ttl_out_of_range", String(ttl));
    assert.ok(Credentials.create({ store: a.store, leaseTtlMs: 24 * 3_600_000 }).ok);
    const record = (await a.credentials.lookupCredential(t.credentialId))!;
    assert.deepEqual(
      {
        kind: record.kind,
        used: record.used,
        revoked: record.revoked,
        leaseId: record.leaseId,
        epoch: record.revocationEpoch,
        runId: record.identity.runId,
      },
      { kind: "bootstrap", used: false, revoked: false, leaseId: null, epoch: 0, runId: "run_1" },
    );
    await a.store.close();
  });

  it("a ticket is single use: the second handshake with it is refused", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    const t = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
    const first = await handshake(a, { kind: "bootstrap", token: t.token });
    assert.equal(refusedCode(first), "ok");
    assert.equal(refusedCode(await handshake(a, { kind: "bootstrap", token: t.token })), "credential_used");
    // The same record replayed to step 6 (a second response racing the first) is refused too.
    const record = (await a.credentials.lookupCredential(t.credentialId))!;
    assert.equal(
      codeOf(
        await a.credentials.reauthorize({
          record: { ...record, used: false },
          selectedVersion: 3,
          proofVerified: true,
        }),
      ),
      "credential_changed",
    );
    assert.equal(
      codeOf(await a.credentials.reauthorize({ record, selectedVersion: 3, proofVerified: true })),
      "credential_used",
    );
    assert.equal((await a.store.run("run_1"))!.freshBootstraps, 1);
    await a.store.close();
  });

  it("an expired ticket is refused at the hello and at re-authorization", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    const t = unwrap(await a.credentials.issueBootstrapTicket("run_1", 1_000));
    const record = (await a.credentials.lookupCredential(t.credentialId))!;
    a.clock.advance(1_000);
    assert.equal(refusedCode(await handshake(a, { kind: "bootstrap", token: t.token })), "credential_expired");
    assert.equal(
      codeOf(await a.credentials.reauthorize({ record, selectedVersion: 3, proofVerified: true })),
      "credential_expired",
    );
    await a.store.close();
  });

  it("a failed proof does not consume the ticket: the same ticket then authenticates", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    const t = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
    assert.equal(refusedCode(await handshake(a, { kind: "bootstrap", token: t.token }, true)), "proof_mismatch");
    const untouched = (await a.credentials.lookupCredential(t.credentialId))!;
    assert.equal(untouched.used, false);
    assert.equal((await a.store.run("run_1"))!.connectionCount, 0);
    // An unverified proof cannot be passed as verified either.
    const refused = await a.credentials.reauthorize({
      record: untouched,
      selectedVersion: 3,
      proofVerified: false as unknown as true,
    });
    assert.equal(codeOf(refused), "proof_not_verified");
    assert.equal((await a.credentials.lookupCredential(t.credentialId))!.used, false);
    assert.equal(refusedCode(await handshake(a, { kind: "bootstrap", token: t.token })), "ok");
    await a.store.close();
  });

  it("mints lease_<uuid> pinned to its protocol version and stores only its digest; the lease reconnects", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    const t = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
    const first = await handshake(a, { kind: "bootstrap", token: t.token });
    assert.ok("lease" in first);
    const { lease, grant } = first;
    assert.match(lease.token, new RegExp(`^lease_${UUID}$`));
    assert.match(lease.leaseId, new RegExp(`^connection_lease_${UUID}$`));
    assert.ok(!lease.leaseId.includes(lease.token.slice(6)), "the public lease id is not derived from the token");
    assert.equal(lease.expiresAtUnixMs, a.clock.now() + 60_000);
    assert.equal(lease.revocationEpoch, 0);
    assert.equal(lease.protocolVersion, 3);
    assert.equal(grant.connectionId, "connection_1");
    const run = (await a.store.run("run_1"))!;
    assert.deepEqual(
      [run.lastLeaseId, run.lastLeaseExpiresAtUnixMs, run.freshBootstraps, run.connectionCount],
      [lease.leaseId, lease.expiresAtUnixMs, 1, 1],
    );

    a.clock.advance(30_000);
    const again = await handshake(a, lease);
    assert.ok("lease" in again);
    assert.equal(again.grant.connectionLeaseToken, null, "a lease welcome carries no token");
    assert.equal(again.grant.connectionId, "connection_2");
    assert.equal(again.lease.leaseId, lease.leaseId);
    assert.equal((await a.store.run("run_1"))!.currentConnectionId, "connection_2", "one live connection: the newest");

    const leaseRecord = (await a.credentials.lookupCredential(credentialOf(lease.token)))!;
    assert.equal(
      codeOf(await a.credentials.reauthorize({ record: leaseRecord, selectedVersion: 2, proofVerified: true })),
      "version_mismatch",
      "a lease keeps its version",
    );
    await a.store.close();
  });

  it("a lease expires after its TTL and is then pruned with the used ticket", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    const t = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
    const first = await handshake(a, { kind: "bootstrap", token: t.token });
    assert.ok("lease" in first);
    a.clock.advance(60_000);
    assert.equal(refusedCode(await handshake(a, first.lease)), "credential_expired");
    assert.equal(await a.credentials.prune(), 2, "the used ticket and the expired lease");
    assert.equal(refusedCode(await handshake(a, first.lease)), "unknown_credential");
    await a.store.close();
  });

  it("revocation raises the epoch, revokes the lease and older unused tickets, and a new ticket still works", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    const t = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
    const spare = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
    const first = await handshake(a, { kind: "bootstrap", token: t.token });
    assert.ok("lease" in first);
    const revoked = unwrap(await a.credentials.revoke("run_1"));
    assert.deepEqual(revoked, { revocationEpoch: 1, revokedCredentials: 2 });
    assert.equal(refusedCode(await handshake(a, first.lease)), "credential_revoked");
    assert.equal(refusedCode(await handshake(a, { kind: "bootstrap", token: spare.token })), "credential_revoked");
    assert.equal(codeOf(await a.credentials.revoke("run_1", 1)), "revocation_epoch_not_greater");
    assert.equal(unwrap(await a.credentials.revoke("run_1", 5)).revocationEpoch, 5);
    const fresh = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
    const replacement = await handshake(a, { kind: "bootstrap", token: fresh.token });
    assert.ok("lease" in replacement);
    assert.equal(replacement.lease.revocationEpoch, 5, "a new lease is issued under the new epoch");
    await a.store.close();
  });

  it("a credential of another run is refused by the handshake", async () => {
    const a = authority(tmp.dir());
    await withRun(a, 1);
    await withRun(a, 2);
    const other = unwrap(await a.credentials.issueBootstrapTicket("run_2"));
    assert.equal(refusedCode(await handshake(a, { kind: "bootstrap", token: other.token })), "identity_mismatch");
    assert.equal((await a.credentials.lookupCredential(other.credentialId))!.used, false);
    await a.store.close();
  });

  it("the welcome carries the lowest pending command, its delivery counted", async () => {
    const a = authority(tmp.dir());
    await withRun(a);
    unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "go" }));
    const t = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
    const first = await handshake(a, { kind: "bootstrap", token: t.token });
    assert.ok("lease" in first);
    assert.equal(first.grant.pendingCommands.length, 1);
    assert.equal((first.grant.pendingCommands[0] as { commandId: string }).commandId, "command_prp_00000001");
    assert.deepEqual((await a.store.run("run_1"))!.commandDeliveryCounts, { command_prp_00000001: 1 });
    await a.store.close();
  });

  it("keeps no raw ticket or lease token in the database files", async () => {
    const d = tmp.dir();
    const a = authority(d);
    await withRun(a);
    const tokens: string[] = [];
    for (let i = 0; i < 3; i++) {
      const t = unwrap(await a.credentials.issueBootstrapTicket("run_1"));
      tokens.push(t.token);
      const c = await handshake(a, { kind: "bootstrap", token: t.token });
      assert.ok("lease" in c);
      tokens.push(c.lease.token);
    }
    tokens.push(unwrap(await a.credentials.issueBootstrapTicket("run_1")).token); // one never used
    const scan = () => {
      for (const f of [STORE_FILE, `${STORE_FILE}-wal`, `${STORE_FILE}-shm`]
        .map((f) => join(d, f))
        .filter(existsSync)) {
        const bytes = readFileSync(f);
        for (const token of tokens) {
          const uuid = token.slice(token.indexOf("_") + 1);
          assert.equal(bytes.indexOf(token), -1, `${f} holds a token`);
          assert.equal(bytes.indexOf(uuid), -1, `${f} holds a token's uuid`);
          assert.equal(bytes.indexOf(Buffer.from(token, "utf16le")), -1, `${f} holds a token in UTF-16`);
        }
      }
    };
    scan();
    await a.store.close();
    scan();
  });
});
