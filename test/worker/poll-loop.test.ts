import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PrpApiError, type WorkerClaim, type WorkerPoll, type WorkerPollAnswer } from "../../src/client/index.js";
import { PollLoop, type PollLoopOptions } from "../../src/worker/poll-loop.js";
import type { RunnerExit, WorkerRunner } from "../../src/worker/start-claim.js";
import { until } from "../support/until.js";

/** A runner the test ends: kill() ends it by SIGKILL, stop() as a cancelled runner does (143). */
class FakeRunner implements WorkerRunner {
  readonly pid = 4242;
  killed = false;
  stopped = false;
  readonly exited: Promise<RunnerExit>;
  #resolve!: (exit: RunnerExit) => void;
  constructor() {
    this.exited = new Promise((resolve) => (this.#resolve = resolve));
  }
  exit(exitCode: number | null, signal: string | null = null): void {
    this.#resolve({ exitCode, signal, stderrTail: [] });
  }
  kill(): void {
    this.killed = true;
    this.exit(null, "SIGKILL");
  }
  stop(): void {
    this.stopped = true;
    this.exit(143);
  }
}

const claim = (runId: string, attempt = 1): WorkerClaim => ({
  runId,
  attempt,
  ticket: `ticket-of-${runId}`,
  expiresAt: new Date(Date.now() + 60_000).toISOString(),
  connectUrl: `ws://127.0.0.1:1/v1/runners/${runId}`,
  protocolMax: 3,
  identity: {
    runId,
    normalizedSessionId: `session_${runId}`,
    runnerInstanceId: `runner_${runId}`,
    environmentLeaseId: `env_${runId}`,
    turnId: `turn_${runId}`,
    itemId: `item_${runId}`,
  },
  harnessArgs: ["--script", "happy-path"],
  spec: { agent: { kind: "fake", script: "happy-path" } },
});

const answer = (claims: WorkerClaim[] = [], lost: string[] = []): WorkerPollAnswer => ({
  workerId: "wkr_0000000000000001",
  heartbeatMs: 100,
  graceMs: 1000,
  claims,
  lost,
});

type Handler = (body: WorkerPoll, signal: AbortSignal, n: number) => Promise<WorkerPollAnswer>;

/**
 * A scripted server: each poll's body is kept (a copy), and the n-th poll gets `handlers[n]`
 * (past the end: an empty answer). It fails the test if two polls are ever in flight at once.
 */
function fakeServer(handlers: Handler[]) {
  const bodies: WorkerPoll[] = [];
  let inFlight = 0;
  let overlapped = false;
  const poll = async (body: WorkerPoll, signal: AbortSignal) => {
    const n = bodies.length;
    bodies.push(structuredClone(body));
    if (++inFlight > 1) overlapped = true;
    try {
      return await (handlers[n] ?? (async () => answer()))(body, signal, n);
    } finally {
      inFlight -= 1;
    }
  };
  return { poll, bodies, overlapped: () => overlapped };
}

/** A poll the server holds until the worker aborts it (a long poll made stale). */
const heldUntilAbort: Handler = (_body, signal) =>
  new Promise((_resolve, reject) => {
    const fail = () => reject(new PrpApiError(0, "network_error", "aborted"));
    if (signal.aborted) fail();
    else signal.addEventListener("abort", fail, { once: true });
  });

function loopWith(server: ReturnType<typeof fakeServer>, options: Partial<PollLoopOptions> = {}) {
  const runners = new Map<string, FakeRunner>();
  const lines: string[] = [];
  const loop = new PollLoop({
    labels: { pool: "test" },
    maxRuns: 2,
    waitMs: 20,
    poll: server.poll,
    start: async (c) => {
      const runner = new FakeRunner();
      runners.set(c.runId, runner);
      return runner;
    },
    log: (line) => lines.push(line),
    backoff: { baseMs: 1, maxMs: 5, random: () => 0 },
    ...options,
  });
  return { loop, runners, lines };
}

/** run() bounded: a loop that never ends fails the test. */
async function ended(run: Promise<number>, timeoutMs = 10_000): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      run,
      new Promise<number>(
        (_, reject) => (timer = setTimeout(() => reject(new Error("the loop did not end")), timeoutMs)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe("the worker's poll loop", () => {
  it("retries a failed poll (network, 5xx, 429) with the same requestId; --once claims one run and ends with its exit status", async () => {
    const server = fakeServer([
      async () => {
        throw new PrpApiError(0, "network_error", "ECONNREFUSED");
      },
      async () => {
        throw new PrpApiError(503, "unavailable", "busy");
      },
      async () => {
        throw new PrpApiError(429, "rate_limited", "slow down");
      },
      async () => answer([claim("run_a", 2)]),
    ]);
    const { loop, runners, lines } = loopWith(server, { once: true });
    const run = loop.run();
    await until(() => runners.has("run_a"), "the claim to start");
    runners.get("run_a")!.exit(0);
    assert.equal(await ended(run), 0);
    const ids = server.bodies.map((b) => b.requestId);
    assert.deepEqual(new Set(ids.slice(0, 4)).size, 1, "the retries repeat the requestId");
    assert.notEqual(ids[4], ids[3], "a new requestId after an answer");
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{8,64}$/);
    assert.equal(server.bodies[0]!.want, 1, "--once wants one run");
    assert.deepEqual(server.bodies[0]!.labels, { pool: "test" });
    assert.equal(server.bodies[0]!.waitMs, 20);
    const last = server.bodies.at(-1)!;
    assert.equal(last.want, 0);
    assert.equal(last.draining, true);
    assert.deepEqual(last.exited, [{ runId: "run_a", exitCode: 0, signal: null }]);
    assert.equal(server.overlapped(), false);
    assert.ok(lines.includes("claimed run run_a (attempt 2)"), lines.join("\n"));
    assert.ok(
      lines.some((l) => l.startsWith("registered as wkr_")),
      lines.join("\n"),
    );
  });

  it("--once ends with the runner's own non-zero status", async () => {
    const server = fakeServer([async () => answer([claim("run_a")])]);
    const { loop, runners } = loopWith(server, { once: true });
    const run = loop.run();
    await until(() => runners.has("run_a"));
    runners.get("run_a")!.exit(3);
    assert.equal(await ended(run), 3);
  });

  it("reports an exit in every poll until one carrying it is answered, and never after", async () => {
    const held: { a?: FakeRunner } = {};
    const server = fakeServer([
      async () => answer([claim("run_a")]),
      async () => {
        await until(() => held.a !== undefined, "the test to hold run_a's runner");
        held.a!.exit(0);
        return answer();
      },
      async () => {
        throw new PrpApiError(500, "internal", "oops");
      },
      async () => answer(),
      async () => answer(),
    ]);
    const { loop, runners } = loopWith(server);
    const run = loop.run();
    await until(() => runners.has("run_a"));
    held.a = runners.get("run_a");
    await until(() => server.bodies.length >= 5, "five polls");
    loop.drain();
    assert.equal(await ended(run), 0);
    const withExit = server.bodies.map((b) => b.exited.map((e) => e.runId).join(","));
    // Poll 2 was sent before the exit; 3 carried it and failed; 4 (its retry) carried it again and was answered.
    assert.deepEqual(withExit.slice(0, 5), ["", "", "run_a", "run_a", ""]);
    assert.equal(server.bodies[3]!.requestId, server.bodies[2]!.requestId);
    assert.ok(
      withExit.slice(4).every((e) => e === ""),
      JSON.stringify(withExit),
    );
    assert.deepEqual(server.bodies[3]!.held, []);
  });

  it("a runner that exits during a long poll aborts it; the same request goes again at once with the exit", async () => {
    const server = fakeServer([async () => answer([claim("run_a")]), heldUntilAbort, async () => answer()]);
    const { loop, runners } = loopWith(server, { waitMs: 30_000 });
    const run = loop.run();
    await until(() => server.bodies.length === 2, "the long poll");
    assert.deepEqual(server.bodies[1]!.held, ["run_a"]);
    assert.equal(server.bodies[1]!.want, 1);
    runners.get("run_a")!.exit(0);
    await until(() => server.bodies.length >= 3, "the resent poll");
    const [, stale, resent] = server.bodies;
    assert.equal(resent!.requestId, stale!.requestId, "the same requestId: the server treats it as a retry");
    assert.deepEqual(resent!.exited, [{ runId: "run_a", exitCode: 0, signal: null }]);
    assert.deepEqual(resent!.held, []);
    assert.equal(resent!.want, 2);
    loop.drain();
    assert.equal(await ended(run), 0);
    assert.equal(server.overlapped(), false);
  });

  it("a 401 stops claiming: no poll after it; the running runner finishes, then the loop ends 1", async () => {
    const server = fakeServer([
      async () => answer([claim("run_a")]),
      async () => {
        throw new PrpApiError(401, "token_invalid", "the credential is revoked");
      },
    ]);
    const { loop, runners, lines } = loopWith(server);
    let result: number | undefined;
    const run = loop.run().then((code) => (result = code));
    await until(() => server.bodies.length === 2);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(server.bodies.length, 2, "no poll after the 401");
    assert.equal(result, undefined, "the loop waits for its runner");
    assert.equal(runners.get("run_a")!.killed || runners.get("run_a")!.stopped, false, "the runner is left alone");
    assert.ok(
      lines.some((l) => l.startsWith("worker_revoked: ")),
      lines.join("\n"),
    );
    runners.get("run_a")!.exit(0);
    assert.equal(await ended(run), 1);
  });

  it("lost: the runner of a run taken back is killed, and its exit reported", async () => {
    const server = fakeServer([async () => answer([claim("run_a")]), async () => answer([], ["run_a", "run_x"])]);
    const { loop, runners, lines } = loopWith(server);
    const run = loop.run();
    await until(() => runners.get("run_a")?.killed === true, "the kill");
    await until(() => server.bodies.some((b) => b.exited.length > 0));
    assert.deepEqual(server.bodies.find((b) => b.exited.length > 0)!.exited, [
      { runId: "run_a", exitCode: null, signal: "SIGKILL" },
    ]);
    assert.ok(
      lines.some((l) => l.startsWith("lost run_a")),
      lines.join("\n"),
    );
    loop.drain();
    assert.equal(await ended(run), 0);
  });

  it("a drain stops claiming, lets the runs finish, releases a claim that arrives while draining, and ends 0", async () => {
    const server = fakeServer([
      async () => answer([claim("run_a"), claim("run_b")]),
      heldUntilAbort,
      async () => answer([claim("run_c")]),
    ]);
    const { loop, runners } = loopWith(server, { maxRuns: 3, waitMs: 30_000 });
    let result: number | undefined;
    const run = loop.run().then((code) => (result = code));
    await until(() => server.bodies.length === 2);
    loop.drain();
    await until(() => server.bodies.length >= 4, "the drain poll and the release");
    const drainPoll = server.bodies[2]!;
    assert.equal(drainPoll.draining, true);
    assert.equal(drainPoll.want, 0);
    assert.equal(drainPoll.requestId, server.bodies[1]!.requestId, "the aborted long poll is resent");
    assert.equal(runners.has("run_c"), false, "never started");
    assert.ok(server.bodies.slice(3).some((b) => b.released.includes("run_c")));
    assert.equal(result, undefined);
    runners.get("run_a")!.exit(0);
    runners.get("run_b")!.exit(0);
    assert.equal(await ended(run), 0);
    const exited = server.bodies.flatMap((b) => b.exited.map((e) => e.runId));
    assert.deepEqual([...new Set(exited)].sort(), ["run_a", "run_b"]);
    assert.equal(runners.get("run_a")!.killed, false);
  });

  it("--drain-timeout: the runner of a run not started is killed and its run released (not reported exited); a started one finishes", async () => {
    const server = fakeServer([async () => answer([claim("run_a"), claim("run_b")])]);
    const asked: string[] = [];
    const { loop, runners } = loopWith(server, {
      drainTimeoutMs: 30,
      unstarted: async (runId) => {
        asked.push(runId);
        return runId === "run_a";
      },
    });
    let result: number | undefined;
    const run = loop.run().then((code) => (result = code));
    await until(() => runners.size === 2);
    loop.drain();
    await until(() => runners.get("run_a")!.killed, "run_a killed after the timeout");
    await until(() => server.bodies.some((b) => b.released.includes("run_a")), "run_a released");
    assert.deepEqual(asked.sort(), ["run_a", "run_b"]);
    assert.equal(runners.get("run_b")!.killed, false);
    assert.equal(result, undefined, "run_b still runs");
    runners.get("run_b")!.exit(0);
    assert.equal(await ended(run), 0);
    const exited = server.bodies.flatMap((b) => b.exited.map((e) => e.runId));
    assert.deepEqual([...new Set(exited)], ["run_b"], "a released run is not reported as exited");
  });

  it("a second signal stops every runner (SIGTERM: the run is cancelled) and ends 128 + its number", async () => {
    const server = fakeServer([async () => answer([claim("run_a")])]);
    const { loop, runners } = loopWith(server);
    const run = loop.run();
    await until(() => runners.has("run_a"));
    loop.drain();
    loop.stop("SIGINT");
    assert.equal(runners.get("run_a")!.stopped, true);
    assert.equal(await ended(run), 130);
    assert.ok(server.bodies.some((b) => b.exited.some((e) => e.runId === "run_a" && e.exitCode === 143)));
  });
});
