import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isLoopback } from "../../src/transport/loopback.js";

describe("the loopback rule", () => {
  it("accepts loopback addresses: 127.0.0.0/8, ::1 (bracketed or not), IPv4-mapped 127/8", () => {
    for (const host of [
      "127.0.0.1",
      "127.5.6.7",
      "127.255.255.255",
      "::1",
      "[::1]",
      "0:0:0:0:0:0:0:1",
      "::ffff:127.0.0.1",
    ])
      assert.equal(isLoopback(host), true, host);
  });

  it("refuses every other address", () => {
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "::2", "::ffff:10.0.0.1", "[::ffff:10.0.0.1]", ""])
      assert.equal(isLoopback(host), false, host);
  });

  it("refuses names, localhost included, unless the caller accepts localhost; never another name", () => {
    for (const host of ["localhost", "LOCALHOST", "localhost.", "localhost.evil.example", "example.org"])
      assert.equal(isLoopback(host), false, host);
    for (const host of ["localhost", "LocalHost"]) assert.equal(isLoopback(host, { localhost: true }), true, host);
    for (const host of ["localhost.", "localhost.evil.example", "example.org", "0.0.0.0", "10.0.0.1"])
      assert.equal(isLoopback(host, { localhost: true }), false, host);
  });
});
