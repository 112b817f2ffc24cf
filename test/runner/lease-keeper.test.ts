import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LeaseKeeper } from "../../src/runner/durable/lease-keeper.js";
import {
  fail,
  leaseRenewedPayload,
  ok,
  type ControlEnvelope,
  type Payload,
  type Result,
  type RunnerLease,
  type TransportError,
} from "../../src/transport/index.js";
import { ManualTimers } from "../support/manual-timers.js";

const TTL = 60_000;

/** The part of a channel the keeper uses, recording what it was asked to do. */
class FakeChannel {
  readonly sent: Array<[string, Payload]> = [];
  readonly renewedTo: number[] = [];
  aborted: TransportError | null = null;
  open = true;

  send(kind: string, payload: Payload): Result<ControlEnvelope> {
    if (!this.open) return fail("socket_closed", "", "closed");
    this.sent.push([kind, payload]);
    return ok({} as ControlEnvelope);
  }

  renewLease(expiresAtUnixMs: number): void {
    this.renewedTo.push(expiresAtUnixMs);
  }

  abort(error: TransportError): void {
    this.aborted = error;
    this.open = false;
  }
}

function keeper(renewalVersion: { version: number | undefined } = { version: 1 }) {
  const timers = new ManualTimers();
  const channel = new FakeChannel();
  const lease: RunnerLease = {
    kind: "lease",
    token: "lease_token",
    leaseId: "connection_lease_1",
    expiresAtUnixMs: timers.now() + TTL,
    revocationEpoch: 2,
    protocolVersion: 3,
  };
  const leases: RunnerLease[] = [];
  const k = new LeaseKeeper({
    channel: channel as never,
    lease,
    renewalVersion: renewalVersion.version,
    timers,
    onLease: (l) => leases.push(l),
  });
  return { k, timers, channel, lease, leases };
}

describe("runner lease keeper (runtime.md §5.9)", () => {
  it("sends lease_renew with the expiry and epoch it holds halfway through the remaining lease", () => {
    const { timers, channel, lease, leases } = keeper();
    timers.advance(TTL / 2 - 1);
    assert.deepEqual(channel.sent, [], "not before halfway");
    timers.advance(1);
    assert.deepEqual(channel.sent, [
      ["lease_renew", { currentExpiresAtUnixMs: lease.expiresAtUnixMs, revocationEpoch: 2 }],
    ]);
    assert.deepEqual(
      leases,
      [{ ...lease, renewalUnanswered: true }],
      "until answered, a reconnect may find the lease renewed",
    );
  });

  it("asks again, with the same observed expiry, for a renewal left unanswered, and stops once the lease has run out", () => {
    const { timers, channel, lease } = keeper();
    timers.advance(TTL / 2);
    assert.equal(channel.sent.length, 1);
    timers.advance(TTL / 4 - 1);
    assert.equal(channel.sent.length, 1, "not before halfway through what remains");
    timers.advance(1);
    assert.equal(channel.sent.length, 2, "asked again");
    timers.advance(10 * TTL);
    const request = ["lease_renew", { currentExpiresAtUnixMs: lease.expiresAtUnixMs, revocationEpoch: 2 }];
    assert.ok(channel.sent.length < 10, `a bounded number of retries (${channel.sent.length})`);
    assert.deepEqual(
      channel.sent,
      channel.sent.map(() => request),
      "every retry names the same expiry: the authority replays its extension",
    );
  });

  it("adopts an answer that echoes what it sent, then renews halfway through the new remaining lease", () => {
    const { k, timers, channel, lease, leases } = keeper();
    timers.advance(TTL / 2);
    const extended = timers.now() + TTL;
    k.renewed({ ...leaseRenewedPayload(lease.expiresAtUnixMs, extended, 2) });
    assert.deepEqual(channel.renewedTo, [extended], "the channel's envelope checks use the new expiry");
    assert.deepEqual(
      leases.at(-1),
      { ...lease, expiresAtUnixMs: extended },
      "the lease to redial with carries the new expiry, answered",
    );
    timers.advance(TTL / 2 - 1);
    assert.equal(channel.sent.length, 1);
    timers.advance(1);
    assert.deepEqual(channel.sent.at(-1), ["lease_renew", { currentExpiresAtUnixMs: extended, revocationEpoch: 2 }]);
    assert.equal(channel.aborted, null);
  });

  const wrongAnswers: Array<[string, (expires: number, now: number) => Payload, string]> = [
    [
      "another previous expiry",
      (e, now) => ({ ...leaseRenewedPayload(e - 1, now + TTL, 2) }),
      "/payload/previousExpiresAtUnixMs",
    ],
    ["another epoch", (e, now) => ({ ...leaseRenewedPayload(e, now + TTL, 3) }), "/payload/revocationEpoch"],
    [
      "an expiry before the renewed one",
      (e) => ({ ...leaseRenewedPayload(e, e - 1, 2) }),
      "/payload/connectionLeaseExpiresAtUnixMs",
    ],
  ];
  for (const [what, answer, path] of wrongAnswers) {
    it(`closes the connection on an answer with ${what}, and keeps the lease it held`, () => {
      const { k, timers, channel, lease, leases } = keeper();
      timers.advance(TTL / 2);
      k.renewed(answer(lease.expiresAtUnixMs, timers.now()));
      assert.deepEqual([channel.aborted?.code, channel.aborted?.path], ["lease_mismatch", path]);
      assert.deepEqual(channel.renewedTo, []);
      assert.deepEqual(leases, [{ ...lease, renewalUnanswered: true }]);
    });
  }

  it("closes the connection on an answer nobody asked for", () => {
    const { k, channel, lease } = keeper();
    k.renewed({ ...leaseRenewedPayload(lease.expiresAtUnixMs, lease.expiresAtUnixMs + TTL, 2) });
    assert.equal(channel.aborted?.code, "unexpected_message");
    assert.deepEqual(channel.renewedTo, []);
  });

  it("renews nothing when the welcome offers no renewal version it knows, and nothing once stopped", () => {
    for (const version of [undefined, 2]) {
      const { timers, channel } = keeper({ version });
      timers.advance(2 * TTL);
      assert.deepEqual(channel.sent, [], String(version));
      assert.equal(timers.waiting, 0);
    }
    const { k, timers, channel } = keeper();
    k.stop();
    timers.advance(2 * TTL);
    assert.deepEqual(channel.sent, []);
  });

  it("a renewal that finds the channel closed leaves the lease as it was", () => {
    const { timers, channel, leases } = keeper();
    channel.open = false;
    timers.advance(TTL / 2);
    assert.deepEqual(leases, []);
  });
});
