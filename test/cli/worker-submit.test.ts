import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { WorkerPoll } from "../../src/client/index.js";
import { packageRoot } from "../../src/contract/package-root.js";
import type { RunIdentity } from "../../src/transport/envelope.js";
import { runnerEmittedNothing } from "../../src/worker/runner-progress.js";
import { authorityFolder, killAll, spawnPrp, startDaemon, type Child, type Daemon } from "./authority-processes.js";
import { adminJson, runPrp } from "./run-cli.js";
import { until } from "../support/until.js";

/** `prp …` to its end, bounded. */
function prp(args: string[]) {
  const res = spawnSync(process.execPath, [join(packageRoot(), "bin/prp.js"), ...args], {
    encoding: "utf8",
    input: "",
    timeout: 30_000,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

type Route = (req: IncomingMessage, body: string, res: ServerResponse) => void;

const json = (res: ServerResponse, status: number, value: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
};

const runOf = (runId: string, dispatch: Record<string, unknown>, terminalState: string | null = null) => ({
  run: { runId, state: "pending", eventCount: 0, terminalState, dispatch },
  identity: {},
});

/** The claim a poll route hands out for `created` with `ticket`: the fake harness, each delay `delayMs`. */
function claimOf(
  created: ReturnType<typeof runWithTicket>["created"],
  ticket: string,
  authorityUrl: string,
  delayMs: string,
) {
  return {
    runId: created.runId,
    attempt: 1,
    ticket,
    expiresAt: new Date(Date.now() + 60_000).toISOString(),
    connectUrl: `${authorityUrl}${created.connectPath}`,
    protocolMax: created.protocolVersion,
    identity: created.identity,
    harnessArgs: ["--script", "happy-path", "--delay-ms", delayMs, "--harness-ready-ms", "30000"],
    spec: { agent: { kind: "fake" as const, script: "happy-path" } },
  };
}

/** A happy-path run created in `store` and a one-use ticket for it, as a poll route hands them out. */
function runWithTicket(store: readonly string[]) {
  const created = adminJson(store, [
    "authority",
    "run",
    "create",
    "--json",
    "--script",
    "happy-path",
    "--prompt",
    "go",
  ]) as { runId: string; identity: RunIdentity; connectPath: string; protocolVersion: number };
  const { ticket } = adminJson(store, ["authority", "ticket", created.runId, "--json"]) as { ticket: string };
  return { created, ticket };
}

describe("prp submit and prp worker", () => {
  let dir: string;
  let token: string;
  let server: Server;
  let api: string;
  let route: Route = (_req, _body, res) => json(res, 404, { code: "not_found", message: "no route" });
  const children: Array<Child | undefined> = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-worker-submit-"));
    token = join(dir, "token");
    writeFileSync(token, "prp_wkr_0000000000000001_x\n", { mode: 0o600 });
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => route(req, body, res));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await killAll(children);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it("--help explains each; usage errors exit 2 with one message", () => {
    const worker = prp(["worker", "--help"]);
    assert.equal(worker.status, 0);
    assert.match(worker.stdout, /prp authority worker add NAME --out FILE/);
    assert.match(worker.stdout, /--drain-timeout/);
    assert.match(worker.stdout, /Exit status/);
    const submit = prp(["submit", "--help"]);
    assert.equal(submit.status, 0);
    assert.match(submit.stdout, /--agent-command/);
    assert.match(submit.stdout, /--wait/);
    for (const [args, pattern] of [
      [["worker", "--max-runs", "1"], /prp worker needs --api/],
      [["worker", "--api", api, "--max-runs", "1"], /--api needs --token-file/],
      [["worker", "--api", api, "--token-file", token], /required option '--max-runs <n>'/],
      [["worker", "--api", api, "--token-file", token, "--max-runs", "0"], /--max-runs/],
      [["worker", "--api", api, "--token-file", token, "--max-runs", "1", "--labels", "A=b"], /lowercase keys/],
      [["worker", "--api", api, "--token-file", token, "--max-runs", "1", "--drain-timeout", "soon"], /duration/],
      [["worker", "--api", api, "--token-file", token, "--max-runs", "1", "--agents", "Claude"], /agent names/],
      [
        [
          "worker",
          "--api",
          api,
          "--token-file",
          token,
          "--max-runs",
          "1",
          "--agents",
          "claud",
          "--dir",
          join(dir, "wa"),
        ],
        /no agent named "claud": the catalog has claude, codex, gemini, opencode/,
      ],
      [["submit", "--api", api, "--token-file", token], /choose one of --agent NAME/],
      [["submit", "--api", api, "--token-file", token, "--script", "a", "--agent", "b"], /choose one of/],
      [["submit", "--script", "happy-path"], /prp submit needs --api/],
      [["submit", "--api", api, "--token-file", token, "--script", "x", "--priority", "high"], /--priority/],
    ] as const) {
      const run = prp([...args]);
      assert.equal(run.status, 2, `${args.join(" ")}: ${run.stdout} ${run.stderr}`);
      assert.match(run.stderr, pattern, args.join(" "));
    }
  });

  it("prp submit: posts the spec (a profile for --agent), prints the run and why it waits; shows the server's refusal; --wait ends on a dispatch that ended without a terminal", async () => {
    const posted: Array<{ body: unknown; key: string | undefined }> = [];
    route = (req, body, res) => {
      if (req.method === "POST" && req.url === "/v1/runs") {
        const spec = JSON.parse(body) as { agent: { kind: string; profile?: string } };
        posted.push({ body: spec, key: req.headers["idempotency-key"] as string | undefined });
        if (spec.agent.profile === "nope")
          return json(res, 400, { code: "unknown_profile", message: "no agent profile nope", path: "/agent/profile" });
        return json(
          res,
          201,
          runOf("run_q", { state: "queued", attempts: 0, waiting: "no live worker holds pool=gpu" }),
        );
      }
      if (req.method === "GET" && req.url === "/v1/runs/run_q")
        return json(
          res,
          200,
          runOf("run_q", { state: "ended", attempts: 0, endReason: "cancelled", endDetail: "cancelled while queued" }),
        );
      if (req.method === "GET" && req.url?.startsWith("/v1/runs/run_q/events")) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.flushHeaders(); // and no event: a cancelled queued run has none
        return;
      }
      json(res, 404, { code: "not_found", message: req.url ?? "" });
    };
    const base = ["submit", "--api", api, "--token-file", token];
    const first = await child(
      spawnPrp([
        ...base,
        "--agent",
        "claude",
        "--prompt",
        "hi",
        "--labels",
        "pool=gpu",
        "--priority",
        "5",
        "--idempotency-key",
        "k1",
      ]),
    );
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout, "run_q\nrun run_q: queued (no live worker holds pool=gpu)\n");
    assert.deepEqual(posted[0], {
      body: { agent: { kind: "profile", profile: "claude" }, prompt: "hi", labels: { pool: "gpu" }, priority: 5 },
      key: "k1",
    });

    const refused = await child(spawnPrp([...base, "--agent", "nope"]));
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /unknown_profile at \/agent\/profile: no agent profile nope/);
    assert.match(
      refused.stderr,
      /note: this machine's agent catalog has no "nope"/,
      "a hint, not a refusal: the API was asked",
    );

    const waited = await child(spawnPrp([...base, "--agent-command", "my-agent --acp", "--wait", "--json"]));
    assert.equal(waited.code, 1, waited.stderr);
    assert.match(waited.stderr, /run run_q ended without a terminal: cancelled: cancelled while queued/);
    assert.equal(JSON.parse(waited.stdout).run.dispatch.endReason, "cancelled", "--json: the Run alone on stdout");
    assert.deepEqual((posted[2]!.body as { agent: unknown }).agent, { kind: "command", command: "my-agent --acp" });
  });

  it("prp worker: a 401 on the first poll exits 1 and says the credential is refused", async () => {
    route = (_req, _body, res) =>
      json(res, 401, { code: "token_invalid", message: "the worker credential is revoked" });
    const worker = await child(
      spawnPrp(["worker", "--api", api, "--token-file", token, "--max-runs", "1", "--dir", join(dir, "w401")]),
    );
    assert.equal(worker.code, 1, worker.stderr);
    assert.match(worker.stderr, /worker_revoked: .*401 token_invalid/);
  });

  it("prp worker --once: claims a run from the poll, runs a real prp-runnerd (ticket on stdin) against a real authority, reports its exit, exits 0", async () => {
    const folder = authorityFolder("prp-worker-once-");
    let daemon: Daemon | undefined;
    try {
      daemon = await startDaemon([...folder.store, "--listen", "127.0.0.1:0", "--poll-ms", "50"]);
      const { created, ticket } = runWithTicket(folder.store);
      const polls: WorkerPoll[] = [];
      const auth: string[] = [];
      route = (req, body, res) => {
        if (req.method !== "POST" || req.url !== "/v1/workers/poll")
          return json(res, 404, { code: "not_found", message: "" });
        auth.push(req.headers.authorization ?? "");
        const poll = JSON.parse(body) as WorkerPoll;
        polls.push(poll);
        const claims = polls.length === 1 ? [claimOf(created, ticket, daemon!.url, "0")] : [];
        json(res, 200, { workerId: "wkr_0000000000000001", heartbeatMs: 500, graceMs: 5000, claims, lost: [] });
      };
      const workDir = join(dir, "once");
      const worker = await child(
        spawnPrp([
          "worker",
          "--api",
          api,
          "--token-file",
          token,
          "--max-runs",
          "2",
          "--once",
          "--labels",
          "pool=a,os=linux",
          "--agents",
          "claude,codex",
          "--dir",
          workDir,
        ]),
        90_000,
      );
      assert.equal(worker.code, 0, worker.stderr);
      assert.match(worker.stderr, /registered as wkr_0000000000000001/);
      assert.match(worker.stderr, new RegExp(`claimed run ${created.runId} \\(attempt 1\\)`));
      assert.match(worker.stderr, new RegExp(`run ${created.runId}: runner exited 0`));
      assert.ok(auth.every((a) => a === "Bearer prp_wkr_0000000000000001_x"));
      assert.deepEqual(polls[0]!.labels, { pool: "a", os: "linux" });
      assert.deepEqual(polls[0]!.agents, ["claude", "codex"], "named agents are advertised as given, unprobed");
      assert.equal(polls[0]!.want, 1);
      assert.equal(polls[0]!.maxRuns, 2);
      const last = polls.at(-1)!;
      assert.deepEqual(last.exited, [{ runId: created.runId, exitCode: 0, signal: null }]);
      assert.deepEqual(last.held, []);
      assert.equal(last.want, 0);

      const record = readFileSync(join(workDir, "started.jsonl"), "utf8");
      assert.equal(record.includes(ticket), false, "the ticket is never written");
      const lines = record
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { kind: string; runId: string; exitCode?: number });
      assert.deepEqual(
        lines.map((l) => [l.kind, l.runId]),
        [
          ["starting", created.runId],
          ["started", created.runId],
          ["exited", created.runId],
        ],
      );
      assert.equal(lines[2]!.exitCode, 0);
      assert.equal(statSync(join(workDir, "state", created.runId)).mode & 0o777, 0o700);
      assert.equal(
        runnerEmittedNothing(join(workDir, "state", created.runId)),
        false,
        "a real run's state shows its events",
      );
      const events = runPrp(["events", "--run", created.runId, "--json", ...folder.store]);
      assert.match(events.stdout.trim().split("\n").at(-1)!, /"eventType":"run\.terminal"/);
    } finally {
      await killAll([daemon]);
      rmSync(folder.dir, { recursive: true, force: true });
    }
  });

  it("a Ctrl-C at the worker's terminal (SIGINT to its process group) drains: the runner, in its own group, finishes its run; exit 0", async () => {
    const folder = authorityFolder("prp-worker-drain-");
    let daemon: Daemon | undefined;
    let workerPid: number | undefined;
    let workerCode: number | null = null;
    try {
      daemon = await startDaemon([...folder.store, "--listen", "127.0.0.1:0", "--poll-ms", "50"]);
      const { created, ticket } = runWithTicket(folder.store);
      const polls: WorkerPoll[] = [];
      route = (_req, body, res) => {
        polls.push(JSON.parse(body) as WorkerPoll);
        const claims = polls.length === 1 ? [claimOf(created, ticket, daemon!.url, "300")] : [];
        json(res, 200, { workerId: "wkr_0000000000000001", heartbeatMs: 400, graceMs: 5000, claims, lost: [] });
      };
      // Detached: the worker leads a group of its own, as a shell's foreground job does.
      const worker = spawn(
        process.execPath,
        [
          join(packageRoot(), "bin/prp.js"),
          "worker",
          "--api",
          api,
          "--token-file",
          token,
          "--max-runs",
          "1",
          "--dir",
          join(dir, "drain"),
        ],
        { detached: true, stdio: ["ignore", "ignore", "pipe"], env: { PATH: process.env.PATH } },
      );
      workerPid = worker.pid!;
      let stderr = "";
      worker.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) =>
        worker.once("exit", (code) => resolve((workerCode = code))),
      );
      // The point: the runner started (its pid in the worker's record), so it leads its own group.
      const record = join(dir, "drain", "started.jsonl");
      await until(
        () => existsSync(record) && readFileSync(record, "utf8").includes('"kind":"started"'),
        () => `the runner started; stderr: ${stderr}`,
        60_000,
      );
      process.kill(-workerPid, "SIGINT");
      await until(
        () => workerCode !== null,
        () => `the worker to drain and exit; stderr: ${stderr}`,
        90_000,
      );
      assert.equal(await exited, 0, stderr);
      assert.match(stderr, /draining: no new runs; waiting for 1 running/);
      assert.match(stderr, new RegExp(`run ${created.runId}: runner exited 0`));
      assert.equal(polls.at(-1)!.draining, true);
      assert.deepEqual(polls.at(-1)!.exited, [{ runId: created.runId, exitCode: 0, signal: null }]);
      const events = runPrp(["events", "--run", created.runId, "--json", ...folder.store])
        .stdout.trim()
        .split("\n");
      const terminal = JSON.parse(events.at(-1)!) as { eventType: string; payload: { runTerminalState?: string } };
      assert.equal(terminal.eventType, "run.terminal");
      assert.equal(
        terminal.payload.runTerminalState,
        "succeeded",
        `not cancelled by the Ctrl-C: ${events.slice(-2).join("\n")}`,
      );
    } finally {
      if (workerPid !== undefined && workerCode === null) process.kill(-workerPid, "SIGKILL");
      await killAll([daemon]);
      rmSync(folder.dir, { recursive: true, force: true });
    }
  });

  /** A child's exit and output, its wait bounded (the child is killed past it by the after hook). */
  async function child(c: Child, timeoutMs = 30_000) {
    children.push(c);
    const code = await c.exited(timeoutMs);
    return { code, stdout: c.stdout(), stderr: c.stderr() };
  }
});
