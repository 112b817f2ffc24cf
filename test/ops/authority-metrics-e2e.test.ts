import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import WebSocket from "ws";
import {
  authorityFolder,
  killAll,
  spawnRunnerd,
  startApiDaemon,
  type Child,
  type Daemon,
} from "../cli/authority-processes.js";
import { adminJson } from "../cli/run-cli.js";
import { TEST_SEED } from "../support/seed.js";
import { until } from "../support/until.js";
import { family, scrape, scrapeMismatches, value, type MetricFamily } from "./scrape.js";

/** A seeded generator (mulberry32): the hostile frames repeat for a seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const word = (next: () => number, n: number) =>
  Array.from({ length: n }, () => "abcdefghijklmnopqrstuvwxyz_0123456789"[Math.floor(next() * 37)]).join("");

/**
 * One hostile runner connection: `path` on the runner listener, `frame` sent once open; settles
 * when the authority closed it, and fails if it has not within 20 s (its handshake deadline is 10 s).
 */
function hostile(base: string, path: string, frame: string): Promise<void> {
  return new Promise((resolve, reject) => {
    // No compression offer: the upgrade must pass, so the frames reach the handshake.
    const ws = new WebSocket(`${base}${path}`, { perMessageDeflate: false });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`the authority did not close a hostile connection to ${path} within 20 s`));
    }, 20_000);
    ws.on("open", () => ws.send(frame));
    ws.on("error", () => {}); // a refused upgrade: close follows
    ws.on("close", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe("prp authority serve: /healthz, /readyz and /metrics on a live daemon", () => {
  let dir: string;
  let storeArgs: string[];
  const children: Array<Daemon | Child> = [];
  before(() => {
    ({ dir, store: storeArgs } = authorityFolder("prp-metrics-e2e-"));
  });
  after(async () => {
    await killAll(children);
    rmSync(dir, { recursive: true, force: true });
  });

  it("after a real run and hostile connections, the scrape agrees with the store and its labels stay bounded", async () => {
    const admin = adminJson(storeArgs, ["authority", "token", "create", "--scope", "admin", "--json"]).token as string;
    const { daemon, apiUrl } = await startApiDaemon([...storeArgs, "--poll-ms", "50", "--health-addr", "127.0.0.1:0"]);
    children.push(daemon);
    await until(
      () => /\nhealth: \S+\n/.test(daemon.stdout()),
      () => `the health URL; stderr: ${daemon.stderr()}`,
    );
    const healthUrl = /\nhealth: (\S+)\n/.exec(daemon.stdout())![1]!;
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${apiUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${admin}`,
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(10_000),
      });
      return { status: res.status, json: (await res.json()) as any };
    };

    // Both addresses answer without a token, and say alive and ready.
    for (const base of [apiUrl, healthUrl]) {
      const healthz = await fetch(`${base}/healthz`);
      assert.equal(healthz.status, 200);
      assert.deepEqual(await healthz.json(), { status: "alive" });
      const readyz = await fetch(`${base}/readyz`);
      assert.equal(readyz.status, 200, await readyz.clone().text());
      assert.deepEqual(await readyz.json(), { status: "ready" });
    }

    const created = await call("POST", "/v1/runs", { agent: { kind: "fake", script: "happy-path" }, prompt: "go" });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const runId = created.json.run.runId as string;
    const ticket = await call("POST", `/v1/runs/${runId}/tickets`, { stateDir: join(dir, "runner") });
    assert.equal(ticket.status, 201, JSON.stringify(ticket.json));
    const runner = spawnRunnerd([...ticket.json.runnerArgs, "--delay-ms", "0"], ticket.json.ticket, dir);
    children.push(runner);
    assert.equal(await runner.exited(), 0, runner.stderr());

    // A hostile peer: garbage hellos on the run's own path, and made-up paths, each distinct.
    console.log(`# hostile frames: seed ${TEST_SEED}`);
    const next = random(TEST_SEED);
    const sent: string[] = [];
    const attempts = 40;
    for (let i = 0; i < attempts; i++) {
      const junk = `zz_${word(next, 12)}`;
      sent.push(junk);
      const path = i % 2 === 0 ? `/api/runner/v1/connect/${runId}` : `/api/runner/v1/connect/run_${junk}`;
      await hostile(daemon.url, path, i % 4 === 0 ? junk : JSON.stringify({ kind: junk, code: junk }));
    }

    const events = await call("GET", `/v1/runs/${runId}/events`);
    const ended = await call("GET", "/v1/runs?state=ended");
    const running = await call("GET", "/v1/runs?state=running");
    // Refusals are counted as they are recorded; the last hostile close may still be in flight.
    let families: MetricFamily[] = [];
    await until(
      async () => {
        families = await scrape(`${healthUrl}/metrics`);
        return value(families, "prp_handshakes_total", { outcome: "refused" }) >= attempts;
      },
      () => `refusals in ${JSON.stringify(family(families, "prp_handshakes_total").metrics)}`,
    );
    // Each hostile connection refused once, under a code of the authority's own.
    assert.equal(value(families, "prp_handshakes_total", { outcome: "refused" }), attempts);
    assert.equal(value(families, "prp_handshakes_total", { outcome: "refused", code: "unknown_run" }), attempts / 2);

    const problems = scrapeMismatches(families, [
      { name: "prp_events_committed_total", value: events.json.events.length },
      { name: "prp_runs", labels: { state: "ended" }, value: ended.json.runs.length },
      { name: "prp_runs", labels: { state: "running" }, value: running.json.runs.length },
      { name: "prp_runs_ended_total", labels: { state: "succeeded", reason: "none" }, value: 1 },
      { name: "prp_handshakes_total", labels: { outcome: "accepted" }, value: 1 },
      { name: "prp_runner_connections", labels: { state: "live" }, value: 0 },
      { name: "prp_run_queue_depth", value: 0 },
    ]);
    assert.deepEqual(problems, []);
    assert.ok(events.json.events.length > 2, "the happy path committed several events");
    // Every commit and every ACK was timed.
    assert.ok(value(families, "prp_commit_duration_seconds") >= 1);
    assert.equal(family(families, "prp_group_commit_events").metrics[0]!.sum, String(events.json.events.length));
    assert.ok(value(families, "prp_commit_to_ack_seconds") >= 1);
    assert.ok(value(families, "prp_process_resident_memory_bytes") > 0, "process metrics are on");

    // Nothing the hostile peer sent became a label; the series stay few.
    const labelValues = families.flatMap((f) => f.metrics.flatMap((s) => Object.values(s.labels ?? {})));
    for (const junk of sent) assert.ok(!labelValues.some((v) => v.includes(junk)), `${junk} became a label`);
    assert.ok(family(families, "prp_handshakes_total").metrics.length <= 8, "few handshake series");

    // The API's /metrics is the same registry.
    const viaApi = await scrape(`${apiUrl}/metrics`);
    assert.equal(value(viaApi, "prp_events_committed_total"), events.json.events.length);

    daemon.kill("SIGTERM");
    assert.equal(await daemon.exited(), 0, daemon.stderr());
  });
});
