import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { WebSocket } from "ws";
import { makeTestCertificates, type TestCertificates } from "../support/certificates.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { authorityFolder, runnerArgs, spawnRunnerd, startDaemon, type Daemon } from "./authority-processes.js";
import { adminJson, runPrp } from "./run-cli.js";

describe("prp authority serve --tls-cert/--tls-key and prp-runnerd wss:// --ca-bundle-path", () => {
  let dir: string;
  let certs: TestCertificates;
  let store: string[];
  let daemon: Daemon;
  before(async () => {
    ({ dir, store } = authorityFolder("prp-authority-tls-"));
    certs = makeTestCertificates(dir);
    daemon = await startDaemon([
      ...store,
      "--listen",
      "127.0.0.1:0",
      "--poll-ms",
      "50",
      "--tls-cert",
      certs.serverCert,
      "--tls-key",
      certs.serverKey,
    ]);
  });
  after(async () => {
    daemon.kill("SIGTERM");
    assert.equal(await daemon.exited(), 0, daemon.stderr());
    rmSync(dir, { recursive: true, force: true });
  });
  const admin = (args: string[]) => adminJson(store, args);
  const runState = (runId: string) =>
    runPrp(["authority", "runs", "--json", ...store])
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((r) => r.runId === runId)!;

  it("the daemon serves wss:// only: a plaintext ws:// upgrade on its port fails", async () => {
    assert.match(daemon.url, /^wss:\/\/127\.0\.0\.1:\d+$/);
    const plain = new WebSocket(`${daemon.url.replace("wss:", "ws:")}/api/runner/v1/connect/run_x`);
    const outcome = await new Promise<string>((resolve) => {
      plain.once("open", () => resolve("open"));
      plain.once("error", (err) => resolve(`error: ${err.message}`));
    });
    plain.terminate();
    assert.match(outcome, /^error/);
  });

  it("an untrusted certificate (no bundle, or another CA's): the runner refuses it, exit 6, nothing sent and the ticket unspent; with the right CA the same ticket runs the whole run", async () => {
    const created = admin([
      "authority",
      "run",
      "create",
      "--json",
      "--script",
      "happy-path",
      "--prompt",
      "Play the happy-path script.",
    ]) as { runId: string; runnerArgs: string[] };
    const ticket = (admin(["authority", "ticket", created.runId, "--json"]) as { ticket: string }).ticket;
    const args = (name: string) => [
      ...runnerArgs(created, daemon.url, join(dir, `runner-${name}`)),
      "--delay-ms",
      "0",
      ...PATIENT_HARNESS,
    ];

    for (const [name, extra] of [
      ["no-bundle", []],
      ["other-ca", ["--ca-bundle-path", certs.otherCaCert]],
    ] as const) {
      const refused = spawnRunnerd([...args(name), ...extra], ticket, dir);
      assert.equal(await refused.exited(), 6, `${name}: ${refused.stderr()}`);
      assert.match(
        refused.stderr(),
        /authority_untrusted: 127\.0\.0\.1:\d+: the authority's certificate is not trusted/,
        name,
      );
    }
    const untouched = runState(created.runId);
    assert.equal(untouched.connectionCount, 0, "no handshake reached the authority");
    assert.equal(untouched.ackedSourceSeq, 0, "no event was committed");

    const runner = spawnRunnerd([...args("trusted"), "--ca-bundle-path", certs.caCert], ticket, dir);
    assert.equal(await runner.exited(), 0, runner.stderr());
    const events = runPrp(["events", "--run", created.runId, "--json", ...store])
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { sourceSeq: number; eventType: string; payload: { runTerminalState?: string } });
    // The happy path's 19 events and, on this v3 connection, the session goal capability and snapshot.
    assert.deepEqual(
      events.map((e) => e.sourceSeq),
      Array.from({ length: 21 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      events
        .filter((e) => e.eventType.startsWith("session.goal") || e.eventType === "session.capabilities.updated")
        .map((e) => e.eventType),
      ["session.capabilities.updated", "session.goal.snapshot"],
    );
    assert.equal(events.at(-1)?.eventType, "run.terminal");
    assert.equal(events.at(-1)?.payload.runTerminalState, "succeeded");
  });

  it("usage: --ca-bundle-path only with wss://, and only a file of certificates; no plaintext listener off loopback", async () => {
    const identity = [
      "--run-id",
      "r",
      "--session-id",
      "s",
      "--runner-id",
      "w",
      "--environment-lease-id",
      "e",
      "--turn-id",
      "t",
      "--item-id",
      "i",
      "--state-dir",
      join(dir, "unused"),
      "--script",
      "happy-path",
    ];
    const runnerd = async (args: string[]) => {
      const child = spawnRunnerd([...args, ...identity], "bootstrap_unused", dir);
      return { status: await child.exited(), stderr: child.stderr() };
    };
    const plain = await runnerd([
      "--connect-url",
      "ws://127.0.0.1:1/api/runner/v1/connect/r",
      "--ca-bundle-path",
      certs.caCert,
    ]);
    assert.equal(plain.status, 2);
    assert.match(plain.stderr, /--ca-bundle-path is allowed only with a wss:\/\/ --connect-url/);
    const notPem = await runnerd([
      "--connect-url",
      "wss://127.0.0.1:1/api/runner/v1/connect/r",
      "--ca-bundle-path",
      certs.serverKey,
    ]);
    assert.equal(notPem.status, 2);
    assert.match(notPem.stderr, /ca_bundle_invalid: .*holds no PEM certificate/);

    const offLoopback = runPrp(["authority", "serve", ...store, "--listen", "0.0.0.0:0"]);
    assert.equal(offLoopback.status, 2);
    assert.match(offLoopback.stderr, /ws:\/\/ is loopback-only: listening on 0\.0\.0\.0 needs TLS/);
  });
});
