import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import Database from "better-sqlite3";
import { STORE_FILE } from "../../src/authority/limits.js";
import { AuthorityServer } from "../../src/authority/server.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { LeaseKeeper } from "../../src/runner/durable/lease-keeper.js";
import {
  credentialId,
  type ControlEnvelope,
  type RunIdentity,
  type RunnerCredential,
  type RunnerLease,
} from "../../src/transport/index.js";
import { BUILD, prpEvent } from "../security/support.js";
import { ManualTimers } from "../support/manual-timers.js";
import { within } from "../support/within.js";
import { Inbox, STILL_HEARTBEAT, connectRunner } from "../transport/support.js";

const HOUR = 3_600_000;
const IDENTITY: RunIdentity = {
  runnerInstanceId: "runner_renew",
  environmentLeaseId: "env_renew",
  runId: "run_renew",
  normalizedSessionId: "session_renew",
  turnId: "turn_renew",
  itemId: "item_renew",
};

/**
 * A real authority (SQLite store, WebSocket on 127.0.0.1) on a clock the test moves, with one
 * registered run. Heartbeats stand still on both sides: these tests are about the lease clock.
 */
class Rig {
  readonly clock = new ManualTimers();
  readonly root = mkdtempSync(join(tmpdir(), "prp-lease-renewal-"));
  readonly server: AuthorityServer;

  constructor(leaseTtlMs?: number) {
    this.server = AuthorityServer.open({
      stateDir: join(this.root, "authority"),
      serverKey: ServerKey.generate(),
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      now: this.clock.now,
      heartbeat: STILL_HEARTBEAT,
      renewalWindowMs: 0, // 1,008 renewals on a manual clock: none waits for company in real time
      ...(leaseTtlMs ? { leaseTtlMs } : {}),
    });
  }

  async start(): Promise<string> {
    await this.server.listen(0);
    const registered = await this.server.registerRun(IDENTITY);
    assert.ok(registered.ok);
    const ticket = await this.server.issueBootstrapTicket(IDENTITY.runId, 60_000);
    assert.ok(ticket.ok);
    return ticket.value.token;
  }

  async connect(credential: RunnerCredential, inbox = new Inbox()) {
    const opened = await connectRunner(this.server.connectUrl(IDENTITY.runId), credential, inbox, {
      identity: IDENTITY,
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      now: this.clock.now,
    });
    return { opened, inbox };
  }

  /** The lease as the authority's database file holds it (what a reconnect is challenged with), read apart from its code. */
  storedLease(token: string): { expiresAtUnixMs: number; renewals: number; lastRenewedAtUnixMs: number | null } {
    const raw = new Database(join(this.root, "authority", STORE_FILE), { readonly: true });
    try {
      const lease = raw
        .prepare("SELECT expires_at FROM credentials WHERE credential_id = ?")
        .get(credentialId(token)) as { expires_at: number } | undefined;
      assert.ok(lease, "the lease is stored");
      const renewal = raw
        .prepare("SELECT renewals, renewed_at FROM lease_renewals WHERE credential_id = ?")
        .get(credentialId(token)) as { renewals: number; renewed_at: number } | undefined;
      return {
        expiresAtUnixMs: lease.expires_at,
        renewals: renewal?.renewals ?? 0,
        lastRenewedAtUnixMs: renewal?.renewed_at ?? null,
      };
    } finally {
      raw.close();
    }
  }

  async close(): Promise<void> {
    try {
      await this.server.close();
    } finally {
      rmSync(this.root, { recursive: true, force: true });
    }
  }
}

/** The runner's handlers: every envelope kept, and `lease_renewed` handed to the keeper, as a durable runner does. */
class KeeperInbox extends Inbox {
  keeper: LeaseKeeper | null = null;

  override onEnvelope(envelope: ControlEnvelope): void {
    super.onEnvelope(envelope);
    if (envelope.kind === "lease_renewed") this.keeper?.renewed(envelope.payload);
  }
}

/** Resolves once `condition` holds, re-checked whenever `notify` is called. */
class Watch {
  private waiters: Array<() => void> = [];
  notify = (): void => {
    for (const wake of this.waiters.splice(0)) wake();
  };
  async until(condition: () => boolean): Promise<void> {
    while (!condition()) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}

describe("lease renewal between the authority and the runner's lease keeper (runtime.md §5.9)", () => {
  let rig: Rig;
  const channels: Array<{ close(): void }> = [];

  afterEach(async () => {
    for (const c of channels.splice(0)) c.close();
    await rig.close();
  });

  it("three weeks on one connection: renewed halfway every time, never expired, every renewal persisted", async () => {
    rig = new Rig(HOUR);
    const inbox = new KeeperInbox();
    const { opened } = await rig.connect({ kind: "bootstrap", token: await rig.start() }, inbox);
    assert.ok(opened.ok, opened.ok ? "" : opened.error.message);
    const { channel, welcome } = opened.value;
    channels.push(channel);
    assert.equal(welcome.payload.connectionLeaseRenewalVersion, 1, "the welcome advertises renewal");
    const token = welcome.lease.token;
    const started = rig.clock.now();

    let sent = 0;
    let adopted = 0;
    let held: RunnerLease = welcome.lease;
    const watch = new Watch();
    const keeper = (inbox.keeper = new LeaseKeeper({
      channel,
      lease: welcome.lease,
      renewalVersion: welcome.payload.connectionLeaseRenewalVersion,
      timers: rig.clock,
      onLease: (lease) => {
        held = lease;
        if (lease.renewalUnanswered) sent++;
        else adopted++;
        watch.notify();
      },
    }));
    const stopKeeper = { close: () => keeper.stop() };
    channels.push(stopKeeper);

    const step = HOUR / 8;
    const threeWeeks = 21 * 24 * HOUR;
    for (let n = 1; n <= threeWeeks / step; n++) {
      rig.clock.advance(step);
      // Halfway through the remaining hour is every fourth step of 7.5 minutes.
      assert.equal(sent, Math.floor(n / 4), `renewals sent after step ${n}`);
      if (sent > adopted)
        await within(
          watch.until(() => adopted === sent),
          10_000,
          `the answer to renewal ${sent}`,
        );
      assert.ok(channel.binding.leaseExpiresAtUnixMs > rig.clock.now(), `the runner's lease is alive after step ${n}`);
      assert.equal(held.expiresAtUnixMs, channel.binding.leaseExpiresAtUnixMs);
      if (n % 4 === 0)
        assert.equal(
          rig.storedLease(token).expiresAtUnixMs,
          rig.clock.now() + HOUR,
          `the renewal at step ${n} persisted now + TTL`,
        );
    }

    const expectedRenewals = threeWeeks / (HOUR / 2);
    assert.equal(expectedRenewals, 1008);
    assert.deepEqual(rig.storedLease(token), {
      expiresAtUnixMs: started + threeWeeks + HOUR,
      renewals: expectedRenewals,
      lastRenewedAtUnixMs: started + threeWeeks,
    });
    const run = await rig.server.run(IDENTITY.runId);
    assert.deepEqual(
      [run?.connectionCount, run?.freshBootstraps, run?.lastLeaseExpiresAtUnixMs],
      [1, 1, started + threeWeeks + HOUR],
      "one connection all along",
    );
    assert.equal(inbox.closed, undefined);
    // The connection still carries work: both sides accept envelopes under the renewed lease.
    assert.ok(channel.send("event", { event: prpEvent(IDENTITY, 1) }).ok);
    await within(
      inbox.until(() => inbox.envelopes.some((e) => e.kind === "ack")),
      10_000,
      "the ack three weeks in",
    );
    assert.equal((await rig.server.run(IDENTITY.runId))?.ackedSourceSeq, 1);
    assert.deepEqual(await rig.server.diagnostics(IDENTITY.runId), []);
  });

  describe("on the wire", () => {
    let token: string;
    let lease: RunnerLease;
    let renewals: ControlEnvelope[];
    let inbox: Inbox;
    let channel: NonNullable<Extract<Awaited<ReturnType<Rig["connect"]>>["opened"], { ok: true }>>["value"]["channel"];

    beforeEach(async () => {
      rig = new Rig();
      const connected = await rig.connect({ kind: "bootstrap", token: await rig.start() });
      assert.ok(connected.opened.ok);
      channel = connected.opened.value.channel;
      channels.push(channel);
      lease = connected.opened.value.welcome.lease;
      token = lease.token;
      inbox = connected.inbox;
      renewals = inbox.envelopes;
    });

    const renew = (changes: Record<string, unknown> = {}) =>
      channel.send("lease_renew", {
        currentExpiresAtUnixMs: lease.expiresAtUnixMs,
        revocationEpoch: lease.revocationEpoch,
        ...changes,
      });

    it("a retry of the same lease_renew is answered with the same persisted extension", async () => {
      rig.clock.advance(30_000);
      assert.ok(renew().ok);
      await within(
        inbox.until(() => renewals.length === 1),
        10_000,
        "the answer",
      );
      rig.clock.advance(1_000);
      assert.ok(renew().ok);
      await within(
        inbox.until(() => renewals.length === 2),
        10_000,
        "the answer to the retry",
      );
      const extended = lease.expiresAtUnixMs + 30_000;
      for (const answer of renewals) {
        assert.equal(answer.kind, "lease_renewed");
        assert.deepEqual(answer.payload, {
          previousExpiresAtUnixMs: lease.expiresAtUnixMs,
          connectionLeaseExpiresAtUnixMs: extended,
          connectionLeaseExpiresAt: new Date(extended).toISOString(),
          revocationEpoch: 0,
        });
      }
      assert.deepEqual(rig.storedLease(token), {
        expiresAtUnixMs: extended,
        renewals: 1,
        lastRenewedAtUnixMs: rig.clock.now() - 1_000,
      });
    });

    const refusals: Array<[string, () => Promise<void> | void, string]> = [
      ["another epoch", () => void renew({ revocationEpoch: 1 }), "lease_renewal_refused"],
      [
        "an expiry it never held",
        () => void renew({ currentExpiresAtUnixMs: lease.expiresAtUnixMs - 1 }),
        "lease_renewal_refused",
      ],
      [
        "a revoked lease",
        async () => {
          assert.equal(await rig.server.revoke(IDENTITY.runId), true);
          await within(
            inbox.until(() => inbox.envelopes.some((e) => e.kind === "revoke")),
            10_000,
            "the revoke frame",
          );
          renew({ revocationEpoch: 1 });
        },
        "credential_revoked",
      ],
      [
        "an expired lease",
        () => {
          rig.clock.advance(60_000);
          renew();
        },
        "lease_expired",
      ],
    ];
    for (const [what, act, code] of refusals) {
      it(`refuses ${what}: a typed close, the lease unchanged`, async () => {
        rig.clock.advance(30_000);
        const before = rig.storedLease(token);
        await act();
        await within(
          inbox.until(() => inbox.closed !== undefined),
          10_000,
          "the close",
        );
        assert.match(inbox.closed?.message ?? "", new RegExp(`1008 ${code}`));
        assert.ok(!inbox.envelopes.some((e) => e.kind === "lease_renewed"));
        assert.deepEqual(rig.storedLease(token), before);
        const diagnostics = await rig.server.diagnostics(IDENTITY.runId);
        assert.ok(
          diagnostics.some((d) => d.code === code),
          JSON.stringify(diagnostics),
        );
        assert.equal(
          (await rig.server.run(IDENTITY.runId))?.malformedFrames,
          0,
          "a refused renewal is not a malformed frame",
        );
      });
    }

    it("an answer lost with the connection: the runner redials and takes the renewed expiry the authority persisted", async () => {
      rig.clock.advance(30_000);
      assert.ok(renew().ok);
      const extended = lease.expiresAtUnixMs + 30_000;
      await within(
        inbox.until(() => renewals.length === 1),
        10_000,
        "the renewal to be persisted and answered",
      );
      channel.close(); // as if the answer never arrived: the runner still holds the old expiry

      const unaware = await rig.connect(lease);
      assert.equal(
        unaware.opened.ok ? "" : unaware.opened.error.code,
        "lease_mismatch",
        "a lease with no renewal outstanding must match exactly",
      );
      const resumed = await rig.connect({ ...lease, renewalUnanswered: true });
      assert.ok(resumed.opened.ok, resumed.opened.ok ? "" : resumed.opened.error.message);
      channels.push(resumed.opened.value.channel);
      assert.equal(resumed.opened.value.welcome.lease.expiresAtUnixMs, extended);
      assert.equal(resumed.opened.value.welcome.lease.renewalUnanswered, undefined);
      assert.equal(resumed.opened.value.channel.binding.leaseExpiresAtUnixMs, extended);
      // Past the old expiry, the new connection lives on.
      rig.clock.advance(45_000);
      assert.ok(resumed.opened.value.channel.send("event", { event: prpEvent(IDENTITY, 1) }).ok);
      await within(
        resumed.inbox.until(() => resumed.inbox.envelopes.some((e) => e.kind === "ack")),
        10_000,
        "the ack past the old expiry",
      );
    });
  });
});
