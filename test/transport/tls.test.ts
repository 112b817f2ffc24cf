import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { readCaBundle } from "../../src/transport/ca-bundle.js";
import { dial, openRunnerChannel, parseConnectUrl, resolveEndpoint } from "../../src/transport/index.js";
import { makeTestCertificates, type TestCertificates } from "../support/certificates.js";
import { BUILD, SecureAuthority, until } from "../security/support.js";
import { RESUME, STILL_HEARTBEAT } from "./support.js";

describe("TLS: the authority's wss:// listener and the runner's trust", () => {
  let dir: string;
  let certs: TestCertificates;
  let authority: SecureAuthority;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-tls-"));
    certs = makeTestCertificates(dir);
    authority = await SecureAuthority.start({
      tls: { cert: readFileSync(certs.serverCert), key: readFileSync(certs.serverKey) },
    });
  });
  after(async () => {
    await authority.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const endpointOf = async (url: string) => {
    const parsed = parseConnectUrl(url);
    assert.ok(parsed.ok);
    const resolved = await resolveEndpoint(parsed.value);
    assert.ok(resolved.ok);
    return resolved.value;
  };
  const bundle = (path: string) => {
    const read = readCaBundle(path);
    assert.ok(read.ok, read.ok ? "" : read.error.message);
    return read.value;
  };

  it("a runner trusting the CA authenticates over TLS, and its socket leaves the admission gate at the welcome", async () => {
    const identity = await authority.newRun();
    const url = authority.url(identity.runId);
    assert.match(url, /^wss:\/\/127\.0\.0\.1:\d+\/api\/runner\/v1\/connect\//);
    const ws = await dial(await endpointOf(url), { caBundle: bundle(certs.caCert) });
    assert.ok(ws.ok, ws.ok ? "" : ws.error.message);
    const opened = await openRunnerChannel(ws.value, {
      credential: { kind: "bootstrap", token: await authority.ticket(identity.runId) },
      identity,
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      resume: RESUME,
      heartbeat: STILL_HEARTBEAT,
      handlers: { onEnvelope: () => {}, onClose: () => {} },
    });
    assert.ok(opened.ok, opened.ok ? "" : opened.error.message);
    // The gate counted the raw TCP socket; the welcome went out on its TLS socket: both are one connection.
    await until(
      () => authority.server.admission().unauthenticated === 0,
      () => `the gate to release the TLS connection: ${JSON.stringify(authority.server.admission())}`,
    );
    assert.equal(authority.server.activeRunnerConnectionCount(identity.runId), 1);
    opened.value.channel.close();
  });

  it("another CA's bundle: the dial ends at once with tls_untrusted, before any handshake", async () => {
    const identity = await authority.newRun();
    const ws = await dial(await endpointOf(authority.url(identity.runId)), { caBundle: bundle(certs.otherCaCert) });
    assert.equal(ws.ok, false);
    assert.equal(ws.ok ? "" : ws.error.code, "tls_untrusted");
    assert.equal((await authority.snapshot(identity.runId)).connectionCount, 0);
    await until(() => authority.server.admission().unauthenticated === 0, "the refused socket to leave the gate");
  });

  it("readCaBundle refuses a symlink, a file others can write, one without a certificate, and a certificate that does not parse", () => {
    const copy = join(dir, "copy.pem");
    writeFileSync(copy, readFileSync(certs.caCert), { mode: 0o644 });
    assert.equal(readCaBundle(copy).ok, true, "644 is fine: a CA bundle is public, only writing it is not");
    chmodSync(copy, 0o664);
    const refusals: Array<[string, RegExp]> = [[copy, /group and others must not be able to write it/]];
    const link = join(dir, "link.pem");
    symlinkSync(certs.caCert, link);
    refusals.push([link, /symbolic link/]);
    const empty = join(dir, "empty.pem");
    writeFileSync(empty, "no certificate here\n", { mode: 0o600 });
    refusals.push([empty, /holds no PEM certificate/]);
    const broken = join(dir, "broken.pem");
    writeFileSync(broken, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", { mode: 0o600 });
    refusals.push([broken, /certificate 1 does not parse/]);
    refusals.push([join(dir, "missing.pem"), /cannot be opened \(ENOENT\)/]);
    for (const [path, reason] of refusals) {
      const read = readCaBundle(path);
      assert.equal(read.ok, false, path);
      assert.equal(read.ok ? "" : read.error.code, "ca_bundle_invalid");
      assert.match(read.ok ? "" : read.error.message, reason);
    }
  });
});
