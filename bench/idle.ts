/**
 * `npm run bench:idle`: what silent runners cost one authority (SQLite, on disk). For each N,
 * a fresh authority in this process takes N runners from a child process (idle-runners.ts: the
 * real dial and handshake, then answering beats and renewing leases only), and over a steady
 * window after all connected this prints the authority process's CPU as a share of one core
 * (the kernel's count, every thread), its RSS growth per connection (VmRSS after minus before),
 * and the pings and lease renewals a second the runners got; RSS is read after a full
 * collection (the npm script runs node with --expose-gc). The target (issue 31): 10,000 idle
 * runners <= 5% of one core and <= 30 KB each; the exit code is 1 if a measured N = 10,000
 * misses it. Nothing here runs in `npm test`.
 *
 *   node dist/bench/idle.js [--runners 1000,10000] [--window-s 60] [--heartbeat-ms N] [--lease-ttl-ms N]
 * Everything is the authority's default unless given: the heartbeat (30 s) and the lease TTL
 * (60 s, so each runner renews every 30 s, a store write). `--lease-ttl-ms 3600000` shows the
 * heartbeat's share alone.
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { AuthorityServer } from "../src/authority/server.js";
import { ServerKey } from "../src/authority/server-key.js";
import { BUILD, benchIdentity } from "./durable-send.js";
import type { IdlePlan, IdleReply, IdleRequest } from "./idle-runners.js";

const { values: args } = parseArgs({
  options: {
    runners: { type: "string", default: "1000,10000" },
    "window-s": { type: "string", default: "60" },
    "heartbeat-ms": { type: "string" },
    "lease-ttl-ms": { type: "string" },
  },
});
const COUNTS = args.runners!.split(",").map((n) => Number.parseInt(n, 10));
const WINDOW_MS = Number(args["window-s"]) * 1000;
/** An optional setting: undefined leaves the authority's default, anything else must be a count of ms > 0. */
const optionalMs = (text: string | undefined): number | undefined => (text === undefined ? undefined : Number(text));
const HEARTBEAT_MS = optionalMs(args["heartbeat-ms"]);
const LEASE_TTL_MS = optionalMs(args["lease-ttl-ms"]);
const badMs = (ms: number | undefined) => ms !== undefined && !(Number.isInteger(ms) && ms > 0);
if (!COUNTS.every((n) => n > 0) || !(WINDOW_MS > 0) || badMs(HEARTBEAT_MS) || badMs(LEASE_TTL_MS)) {
  console.error(
    "usage: node dist/bench/idle.js [--runners N[,N...]] [--window-s S>0] [--heartbeat-ms N] [--lease-ttl-ms N]",
  );
  process.exit(2);
}
const TARGET = { runners: 10_000, coreShare: 0.05, rssBytesPerConnection: 30 * 1024 };
/** Plans handed to the child at once: each ticket is issued just before, well within its TTL. */
const CHUNK = 500;
const TICKET_TTL_MS = 60_000;

/**
 * What the connects left behind settles before the window: V8's collections once allocation stops
 * (a few hundred MB of heap at 10,000 connections), the store's checkpoint.
 */
const SETTLE_MS = 30_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** VmRSS of this process in bytes, from the kernel, after a full collection when --expose-gc gave one. */
function rssBytes(): number {
  (globalThis as { gc?: () => void }).gc?.();
  const line = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync("/proc/self/status", "utf8"));
  if (!line) throw new Error("no VmRSS in /proc/self/status");
  return Number(line[1]) * 1024;
}

/** The child's next reply of `kind`, or an error naming what it waited for. */
function ask<K extends IdleReply["kind"]>(
  child: ChildProcess,
  request: IdleRequest,
  kind: K,
  timeoutMs: number,
): Promise<Extract<IdleReply, { kind: K }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`no "${kind}" from the runners within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (reply: IdleReply) => {
      if (reply.kind === "failed") done(new Error(reply.error));
      else if (reply.kind === kind) done(null, reply as Extract<IdleReply, { kind: K }>);
    };
    const onExit = (code: number | null) => done(new Error(`the runners' process exited (${code})`));
    const done = (err: Error | null, value?: Extract<IdleReply, { kind: K }>) => {
      clearTimeout(timer);
      child.off("message", onMessage);
      child.off("exit", onExit);
      if (err) reject(err);
      else resolve(value!);
    };
    child.on("message", onMessage);
    child.once("exit", onExit);
    child.send(request);
  });
}

interface IdleFigures {
  runners: number;
  intervalMs: number;
  coreShare: number;
  rssBytesPerConnection: number;
  pingsPerSecond: number;
  renewalsPerSecond: number;
  closed: number;
}

async function measure(runners: number): Promise<IdleFigures> {
  const root = mkdtempSync(join(tmpdir(), "prp-bench-idle-"));
  const server = AuthorityServer.open({
    stateDir: join(root, "authority"),
    serverKey: ServerKey.generate(),
    runnerVersion: BUILD.version,
    runnerDigest: BUILD.digest,
    ...(LEASE_TTL_MS !== undefined ? { leaseTtlMs: LEASE_TTL_MS } : {}),
    ...(HEARTBEAT_MS !== undefined ? { heartbeatIntervalMs: HEARTBEAT_MS } : {}),
    connections: { maxUnauthenticatedPerAddress: 256, maxUnauthenticated: 256 },
  });
  const child = fork(new URL("./idle-runners.js", import.meta.url), { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  try {
    await server.listen(0);
    const ids = Array.from({ length: runners }, (_, i) => benchIdentity(i));
    for (const id of ids) {
      const registered = await server.registerRun(id);
      if (!registered.ok) throw new Error(registered.error.message);
    }
    const rssBefore = rssBytes();
    for (let at = 0; at < runners; at += CHUNK) {
      const plans: IdlePlan[] = [];
      for (const id of ids.slice(at, at + CHUNK)) {
        const ticket = await server.issueBootstrapTicket(id.runId, TICKET_TTL_MS);
        if (!ticket.ok) throw new Error(ticket.error.message);
        plans.push({ url: server.connectUrl(id.runId), id, token: ticket.value.token });
      }
      await ask(child, { kind: "connect", plans }, "connected", TICKET_TTL_MS);
    }
    (globalThis as { gc?: () => void }).gc?.(); // the connects' garbage, not the idle window's
    await sleep(SETTLE_MS);
    const start = await ask(child, { kind: "count" }, "count", 10_000);
    const cpu = process.cpuUsage();
    const begun = performance.now();
    await sleep(WINDOW_MS);
    const used = process.cpuUsage(cpu);
    const elapsedMs = performance.now() - begun;
    const end = await ask(child, { kind: "count" }, "count", 10_000);
    const rssAfter = rssBytes();
    return {
      runners,
      intervalMs: end.welcomeIntervalMs ?? NaN,
      coreShare: (used.user + used.system) / 1000 / elapsedMs,
      rssBytesPerConnection: (rssAfter - rssBefore) / runners,
      pingsPerSecond: ((end.pings - start.pings) * 1000) / elapsedMs,
      renewalsPerSecond: ((end.renewals - start.renewals) * 1000) / elapsedMs,
      closed: end.closed,
    };
  } finally {
    if (child.connected) child.send({ kind: "close" } satisfies IdleRequest);
    child.kill("SIGTERM");
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
}

let missed = false;
console.log(
  `bench:idle, window ${WINDOW_MS / 1000} s; target: ${TARGET.runners} runners <= 5% of one core, <= 30 KB each`,
);
for (const runners of COUNTS) {
  const f = await measure(runners);
  const met = f.coreShare <= TARGET.coreShare && f.rssBytesPerConnection <= TARGET.rssBytesPerConnection;
  if (runners === TARGET.runners && !met) missed = true;
  console.log(
    [
      `runners ${f.runners}`,
      `heartbeat ${f.intervalMs} ms`,
      `cpu ${(f.coreShare * 100).toFixed(2)}% of one core`,
      `rss ${(f.rssBytesPerConnection / 1024).toFixed(1)} KB/connection`,
      `pings ${f.pingsPerSecond.toFixed(0)}/s`,
      `lease renewals ${f.renewalsPerSecond.toFixed(0)}/s`,
      `closed ${f.closed}`,
      runners === TARGET.runners ? (met ? "target met" : "TARGET MISSED") : "",
    ]
      .filter(Boolean)
      .join(", "),
  );
}
process.exit(missed ? 1 : 0);
