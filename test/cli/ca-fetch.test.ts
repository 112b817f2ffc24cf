import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { caFetch } from "../../src/cli/ca-fetch.js";
import { makeTestCertificates, type TestCertificates } from "../support/certificates.js";
import { spawnPrp } from "./authority-processes.js";

describe("--api https:// with --ca-bundle-path (ca-fetch.ts)", () => {
  let dir: string;
  let certs: TestCertificates;
  let server: Server;
  let url: string;
  const seen: string[] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-ca-fetch-"));
    certs = makeTestCertificates(dir);
    server = createServer({ cert: readFileSync(certs.serverCert), key: readFileSync(certs.serverKey) }, (req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ runs: [], next: null }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it("reaches a server signed by the bundle's CA; refuses it without the CA or with another CA", async () => {
    const answer = await caFetch(readFileSync(certs.caCert, "utf8"))(`${url}/v1/runs`);
    assert.equal(answer.status, 200);
    assert.deepEqual(await answer.json(), { runs: [], next: null });
    await assert.rejects(fetch(`${url}/v1/runs`), "Node's roots alone do not trust the test CA");
    await assert.rejects(caFetch(readFileSync(certs.otherCaCert, "utf8"))(`${url}/v1/runs`));
  });

  it("prp authority runs --api https://… --ca-bundle-path F: the CLI goes through it; without it, api_unreachable", async () => {
    const token = join(dir, "token");
    writeFileSync(token, "prp_tok_0000000000000000_x\n", { mode: 0o600 });
    const api = ["authority", "runs", "--json", "--api", url, "--token-file", token];
    const trusted = spawnPrp([...api, "--ca-bundle-path", certs.caCert]);
    assert.equal(await trusted.exited(30_000), 0, trusted.stderr());
    assert.ok(seen.some((s) => s.startsWith("GET /v1/runs") && s.endsWith("Bearer prp_tok_0000000000000000_x")));
    const untrusted = spawnPrp(api);
    assert.equal(await untrusted.exited(30_000), 1, untrusted.stderr());
    assert.match(untrusted.stderr(), /api_unreachable/);
    const http = spawnPrp([
      "authority",
      "runs",
      "--api",
      "http://127.0.0.1:9",
      "--token-file",
      token,
      "--ca-bundle-path",
      certs.caCert,
    ]);
    assert.equal(await http.exited(30_000), 2, http.stderr());
    assert.match(http.stderr(), /--ca-bundle-path goes with an https:\/\/ --api/);
  });
});
