import assert from "node:assert/strict";
import { createServer } from "node:net";
import { describe, it } from "node:test";
import {
  dial,
  isLoopback,
  parseConnectUrl,
  resolveEndpoint,
  sortAddresses,
  type LookupAll,
} from "../../src/transport/index.js";

const refusal = (url: string): string => {
  const r = parseConnectUrl(url);
  return r.ok ? "ok" : r.error.message;
};

const stub =
  (...addresses: string[]): LookupAll =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

async function resolved(url: string, lookup: LookupAll) {
  const endpoint = parseConnectUrl(url);
  assert.ok(endpoint.ok);
  return resolveEndpoint(endpoint.value, lookup);
}

describe("connect URL rules", () => {
  it("accept ws and wss URLs with a host, a port other than 0 and a plain path", () => {
    const r = parseConnectUrl("ws://localhost:43127/api/runner/v1/connect/run-1");
    assert.deepEqual(r.ok && r.value, {
      url: "ws://localhost:43127/api/runner/v1/connect/run-1",
      scheme: "ws",
      host: "localhost",
      port: 43127,
      path: "/api/runner/v1/connect/run-1",
    });
    const v6 = parseConnectUrl("ws://[::1]:8080/x");
    assert.equal(v6.ok && v6.value.host, "::1");
    const wss = parseConnectUrl("wss://example.test/x");
    assert.equal(wss.ok && wss.value.port, 443);
  });

  it("refuse userinfo, %, a query, a fragment, a backslash, control characters and whitespace", () => {
    const cases: Array<[string, RegExp]> = [
      ["ws://user@127.0.0.1:1/x", /userinfo/],
      ["ws://user:pw@127.0.0.1:1/x", /userinfo/],
      ["ws://127.0.0.1:1/%2e%2e/x", /percent/],
      ["ws://127.0.0.1:1/x?token=1", /query/],
      ["ws://127.0.0.1:1/x?", /query/],
      ["ws://127.0.0.1:1/x#frag", /fragment/],
      ["ws://127.0.0.1:1\\x", /backslash/],
      ["ws://127.0.0.1:1/x\u0000", /control/],
      ["ws://127.0.0.1:1/x\u007f", /control/],
      ["ws://127.0.0.1:1/x y", /whitespace/],
      ["ws://127.0.0.1:1/x\u00a0", /whitespace/],
      [" ws://127.0.0.1:1/x", /whitespace/],
    ];
    for (const [url, reason] of cases) assert.match(refusal(url), reason, JSON.stringify(url));
  });

  it("refuse port 0, other schemes and unparsable URLs", () => {
    assert.match(refusal("ws://127.0.0.1:0/x"), /port/);
    assert.match(refusal("http://127.0.0.1:1/x"), /ws:\/\/ or wss:\/\//);
    assert.match(refusal("ws://"), /parse|host/);
    assert.match(refusal("not a url"), /whitespace/);
    assert.match(refusal("127.0.0.1:1"), /ws:\/\/ or wss:\/\/|parse/);
  });
});

describe("DNS resolution and pinning", () => {
  it("allow ws:// only when every answer is loopback", async () => {
    const ok = await resolved("ws://runner.test:9/x", stub("127.0.0.1", "::1", "127.0.0.2"));
    assert.deepEqual(ok.ok && ok.value.addresses, ["127.0.0.1", "127.0.0.2", "::1"]);
    const mixed = await resolved("ws://runner.test:9/x", stub("127.0.0.1", "192.0.2.7"));
    assert.equal(mixed.ok ? "" : mixed.error.code, "non_loopback_address");
    assert.match(mixed.ok ? "" : mixed.error.message, /192\.0\.2\.7/);
    const outside = await resolved("ws://runner.test:9/x", stub("10.0.0.1"));
    assert.equal(outside.ok ? "" : outside.error.code, "non_loopback_address");
  });

  it("refuse a non-loopback IP literal for ws:// without asking DNS", async () => {
    const never: LookupAll = async () => assert.fail("no lookup for a literal");
    const literal = await resolved("ws://192.0.2.1:9/x", never);
    assert.equal(literal.ok ? "" : literal.error.code, "non_loopback_address");
    const loop = await resolved("ws://127.0.0.1:9/x", never);
    assert.deepEqual(loop.ok && loop.value.addresses, ["127.0.0.1"]);
  });

  it("let wss:// reach any address, pinned in sorted order", async () => {
    const r = await resolved("wss://core.test/x", stub("2001:db8::2", "198.51.100.20", "198.51.100.3", "2001:db8::10"));
    assert.deepEqual(r.ok && r.value.addresses, ["198.51.100.3", "198.51.100.20", "2001:db8::2", "2001:db8::10"]);
  });

  it("report a failed or empty lookup", async () => {
    const failing: LookupAll = async () => {
      throw new Error("ENOTFOUND");
    };
    const r = await resolved("ws://missing.test:9/x", failing);
    assert.equal(r.ok ? "" : r.error.code, "dns_failed");
    const empty = await resolved("ws://empty.test:9/x", stub());
    assert.equal(empty.ok ? "" : empty.error.code, "dns_failed");
  });

  it("know loopback, including IPv4-mapped, and sort numerically", () => {
    for (const a of ["127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"]) assert.ok(isLoopback(a), a);
    for (const a of ["128.0.0.1", "::2", "::ffff:10.0.0.1", "0.0.0.0", "localhost"]) assert.ok(!isLoopback(a), a);
    assert.deepEqual(sortAddresses(["::1", "127.0.0.10", "127.0.0.9", "127.0.0.9", "::ffff:127.0.0.1"]), [
      "127.0.0.9",
      "127.0.0.10",
      "::1",
      "::ffff:127.0.0.1",
    ]);
  });
});

describe("dial", () => {
  it("tries the pinned addresses in order and reports every failure", async () => {
    // A port that was just free: nothing listens, so each attempt is refused at once.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const endpoint = parseConnectUrl(`ws://runner.test:${port}/api/runner/v1/connect/run-1`);
    assert.ok(endpoint.ok);
    const result = await dial(
      { ...endpoint.value, addresses: ["127.0.0.1", "127.0.0.2"] },
      { attemptMs: 500, totalMs: 2_000 },
    );
    assert.equal(result.ok ? "" : result.error.code, "connect_failed");
    assert.match(result.ok ? "" : result.error.message, /^127\.0\.0\.1:\d+: .*; 127\.0\.0\.2:\d+: /);
  });
});
