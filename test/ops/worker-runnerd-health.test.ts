import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  authorityFolder,
  killAll,
  spawnPrp,
  spawnRunnerd,
  startApiDaemon,
  type Child,
  type Daemon,
} from "../cli/authority-processes.js";
import { adminJson, runPrp } from "../cli/run-cli.js";
import { workerHealth, POLL_FRESH_MS } from "../../src/ops/worker-health.js";
import { healthResponse } from "../../src/ops/health.js";
import { until } from "../support/until.js";
import { family, scrape, value } from "./scrape.js";

const get = async (url: string) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text() };
};

/** The URL a child printed as `… health: URL` on stderr, once it has. */
async function healthUrl(child: Child, name: string): Promise<string> {
  await until(
    () => /health: (\S+)\n/.test(child.stderr()),
    () => `${name}'s health URL; stderr: ${child.stderr()}`,
  );
  return /health: (\S+)\n/.exec(child.stderr())![1]!;
}

describe("prp worker --health-addr and prp-runnerd --health-addr", () => {
  let dir: string;
  let storeArgs: string[];
  let daemon: Daemon;
  let apiUrl: string;
  let admin: string;
  const children: Array<Daemon | Child> = [];
  before(async () => {
    ({ dir, store: storeArgs } = authorityFolder("prp-ops-health-"));
    admin = adminJson(storeArgs, ["authority", "token", "create", "--scope", "admin", "--json"]).token as string;
    ({ daemon, apiUrl } = await startApiDaemon([...storeArgs, "--poll-ms", "50"]));
    children.push(daemon);
  });
  after(async () => {
    await killAll(children);
    rmSync(dir, { recursive: true, force: true });
  });

  const createRun = async () => {
    const res = await fetch(`${apiUrl}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body: JSON.stringify({ agent: { kind: "fake", script: "happy-path" }, prompt: "go" }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as any;
    assert.equal(res.status, 201, JSON.stringify(body));
    return body.run.runId as string;
  };

  it("a worker: ready once a poll is answered, and its metrics count polls and the runner it started", async () => {
    const cred = join(dir, "worker.cred");
    const added = runPrp(["authority", "worker", "add", "ops-01", "--out", cred, ...storeArgs]);
    assert.equal(added.status, 0, added.stderr);
    const worker = spawnPrp([
      "worker",
      ...["--api", apiUrl, "--token-file", cred, "--max-runs", "1", "--poll-wait-ms", "200"],
      ...["--dir", join(dir, "worker"), "--health-addr", "127.0.0.1:0"],
    ]);
    children.push(worker);
    const url = await healthUrl(worker, "prp worker");
    assert.equal((await get(`${url}/healthz`)).status, 200);
    let ready = { status: 0, text: "" };
    await until(
      async () => (ready = await get(`${url}/readyz`)).status === 200,
      () => `the worker ready: ${JSON.stringify(ready)}`,
    );
    await createRun();
    await until(
      async () => value(await scrape(`${url}/metrics`), "prp_worker_runners_started_total") === 1,
      () => `a runner started; stderr: ${worker.stderr()}`,
    );
    const families = await scrape(`${url}/metrics`);
    assert.ok(value(families, "prp_worker_polls_total", { outcome: "answered" }) >= 1);
    // The authority timed the run's wait in the queue once, however often the worker polled since.
    const authority = await scrape(`${apiUrl}/metrics`);
    assert.equal(value(authority, "prp_run_queue_wait_seconds"), 1);
    const wait = Number(family(authority, "prp_run_queue_wait_seconds").metrics[0]!.sum);
    assert.ok(wait >= 0 && wait < 60, `a wait of ${wait} s`);
    for (const name of ["prp_runner_outbox_events", "prp_runner_outbox_bytes", "prp_runner_reconnects"])
      assert.ok(value(families, name) >= 0, name);
    worker.kill("SIGTERM");
    assert.equal(await worker.exited(), 0, worker.stderr());
  });

  it("a runner: ready while its run is under way; events emitted read from its state agree with the store", async () => {
    const runId = await createRun();
    const res = await fetch(`${apiUrl}/v1/runs/${runId}/tickets`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body: JSON.stringify({ stateDir: join(dir, "runnerd-state") }),
    });
    const ticket = (await res.json()) as any;
    assert.equal(res.status, 201, JSON.stringify(ticket));
    const runner = spawnRunnerd(
      [...ticket.runnerArgs, "--delay-ms", "400", "--health-addr", "127.0.0.1:0"],
      ticket.ticket,
      dir,
    );
    children.push(runner);
    const url = await healthUrl(runner, "prp-runnerd");
    let emitted = 0;
    await until(
      async () => (emitted = value(await scrape(`${url}/metrics`), "prp_runner_events_emitted")) >= 2,
      () => `events emitted (${emitted}); stderr: ${runner.stderr()}`,
    );
    assert.equal((await get(`${url}/readyz`)).status, 200);
    const families = await scrape(`${url}/metrics`);
    assert.ok(value(families, "prp_runner_outbox_events") <= value(families, "prp_runner_events_emitted"));
    // The figure is the runner's own numbering: the authority committed at most that many of its events.
    const events = await fetch(`${apiUrl}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${admin}` } });
    const committed = ((await events.json()) as any).events.length as number;
    assert.ok(committed <= value(families, "prp_runner_events_emitted") + 1, `${committed} committed`);
    assert.equal(await runner.exited(), 0, runner.stderr());
  });
});

describe("a worker's readiness", () => {
  it("is 503 before any answered poll, 200 after one, 503 once it is stale or the credential was refused", async () => {
    let nowMs = 1_000_000;
    let probe = { held: [] as string[], halted: false };
    const health = workerHealth(
      "/nonexistent-worker-dir",
      () => probe,
      () => nowMs,
    );
    const status = async () => (await healthResponse("/readyz", health.source))!;
    assert.equal((await status()).status, 503);
    assert.match((await status()).body, /no poll answered yet/);
    const poll = health.wrapPoll(async () => ({}) as never);
    await poll({} as never, new AbortController().signal);
    assert.equal((await status()).status, 200);
    nowMs += POLL_FRESH_MS + 1;
    assert.equal((await status()).status, 503, "a poll answered too long ago");
    await poll({} as never, new AbortController().signal);
    assert.equal((await status()).status, 200);
    probe = { held: [], halted: true };
    assert.match((await status()).body, /refused this worker's credential/);
  });
});
