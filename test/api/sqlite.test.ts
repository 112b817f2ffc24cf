import { mkdirSync, readFileSync } from "node:fs";
import { get as httpsGet } from "node:https";
import { after, describe, it } from "node:test";
import { makeTestCertificates } from "../support/certificates.js";
import assert from "node:assert/strict";
import { openStore, tempRoot } from "../authority/support.js";
import { apiSuite } from "./suite.js";
import { startApi } from "./support.js";

const tmp = tempRoot("prp-api-");
after(() => tmp.cleanup());

apiSuite(
  "SQLite",
  async () => openStore(tmp.dir()),
  async () => {},
);

describe("the API's port", () => {
  it("keeps CORS closed unless one origin is named, and then opens it to that origin only", async () => {
    const closed = await startApi(openStore(tmp.dir()));
    const open = await startApi(openStore(tmp.dir()), { corsOrigin: "https://app.example.com" });
    try {
      const preflight = (url: string, origin: string) =>
        fetch(`${url}/v1/runs`, {
          method: "OPTIONS",
          headers: {
            origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization",
          },
        });
      const none = await preflight(closed.api.url, "https://app.example.com");
      assert.equal(none.headers.get("access-control-allow-origin"), null);
      const yes = await preflight(open.api.url, "https://app.example.com");
      assert.equal(yes.headers.get("access-control-allow-origin"), "https://app.example.com");
      const get = await open.call("GET", "/v1/runs", { scope: "read", headers: { origin: "https://evil.example" } });
      assert.equal(
        get.headers.get("access-control-allow-origin"),
        "https://app.example.com",
        "never the caller's own origin",
      );
      assert.equal(get.headers.get("access-control-allow-credentials"), null);
    } finally {
      for (const s of [closed, open]) {
        await s.api.close();
        await s.store.close();
      }
    }
  });

  it("limits each token's rate: one token over it is refused, another is not", async () => {
    const t = await startApi(openStore(tmp.dir()), { limits: { rateMax: 3, rateWindowMs: 60_000 } });
    try {
      const codes: number[] = [];
      for (let i = 0; i < 4; i++) codes.push((await t.call("GET", "/v1/runs", { scope: "read" })).status);
      assert.deepEqual(codes, [200, 200, 200, 429]);
      const limited = await t.call("GET", "/v1/runs", { scope: "read" });
      assert.equal(limited.json.code, "rate_limited");
      assert.equal(
        (await t.call("GET", "/v1/runs", { scope: "operate" })).status,
        200,
        "another token has its own budget",
      );
    } finally {
      await t.api.close();
      await t.store.close();
    }
  });

  it("serves https with a TLS identity", async () => {
    const dir = tmp.dir();
    mkdirSync(dir, { recursive: true });
    const certs = makeTestCertificates(dir);
    const t = await startApi(openStore(tmp.dir()), {
      tls: { cert: readFileSync(certs.serverCert), key: readFileSync(certs.serverKey) },
    });
    try {
      assert.match(t.api.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpsGet(
          `${t.api.url}/v1/runs`,
          { ca: readFileSync(certs.caCert), headers: { authorization: `Bearer ${t.tokens.read}` }, timeout: 10_000 },
          (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (d: string) => (body += d));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on("error", reject);
      });
      assert.equal(answer.status, 200, answer.body);
      assert.deepEqual(JSON.parse(answer.body).runs, []);
    } finally {
      await t.api.close();
      await t.store.close();
    }
  });

  it("listens on loopback only without TLS", async () => {
    const store = openStore(tmp.dir());
    try {
      const { ApiServer } = await import("../../src/api/server.js");
      await assert.rejects(
        ApiServer.start({ store, host: "0.0.0.0", port: 0, runnerConnectUrl: "ws://127.0.0.1:1" }),
        /loopback/,
      );
    } finally {
      await store.close();
    }
  });
});
