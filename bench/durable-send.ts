/**
 * One whole durable run for the transport bench, through the real send path: an in-process
 * `AuthorityServer` on 127.0.0.1 and a `DurableRunner` whose `FakeHarnessDriver` plays a
 * generated script of item.started / item.delta / item.completed triples. The triples keep the
 * runner's delta coalescer from merging anything, so every scripted event is one committed
 * event and the count measured is the count sent.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { AuthorityServer } from "../src/authority/server.js";
import { ServerKey } from "../src/authority/server-key.js";
import type { PrpEvent } from "../src/contract/kinds.js";
import { FakeHarnessDriver } from "../src/harness/fake-driver.js";
import { DurableRunner } from "../src/runner/durable/durable-runner.js";
import type { RunIdentity } from "../src/transport/index.js";
import { observeOutbox } from "./outbox-probe.js";
import { writeScript, type EventStep } from "./fake-script.js";

export const BUILD = { version: "bench", digest: `sha256:${"be".repeat(32)}` };

export interface DurableSend {
  /** Events the authority committed: the scripted ones and the runner's own (start, result, terminal). */
  events: number;
  /** From `DurableRunner.run()` to its outcome, run_delivered: harness start and handshake included. */
  seconds: number;
  /** Average bytes of a committed event envelope, and one committed item.delta. */
  eventBytes: number;
  sample: PrpEvent;
  /** Milliseconds from the runner's outbox commit of each event to the authority's ingest of it (onCommittedEvent, just before its commit). */
  ingestMs: number[];
  /** Milliseconds from the runner's outbox commit of each event to the runner applying the ACK that covers it: queueing in the outbox included. */
  ackMs: number[];
  /** Milliseconds from the runner sending each event to applying the ACK that covers it: the window's round trip. */
  sendAckMs: number[];
}

/** The script's events: `triples` items, each started, one delta, completed. */
export function tripleSteps(triples: number): EventStep[] {
  return Array.from({ length: triples }, (_, i) => {
    const item_id = `item_${i}`;
    return [
      { kind: "event" as const, event_type: "item.started", item_id, payload: { kind: "command", text: "" } },
      { kind: "event" as const, event_type: "item.delta", item_id, payload: { text: `token ${i} ` } },
      {
        kind: "event" as const,
        event_type: "item.completed",
        item_id,
        payload: { kind: "command", text: `token ${i} ` },
      },
    ];
  }).flat();
}

export const benchIdentity = (n: number): RunIdentity => ({
  runnerInstanceId: `runner_bench_${n}`,
  environmentLeaseId: `env_bench_${n}`,
  runId: `run_bench_${n}`,
  normalizedSessionId: `session_bench_${n}`,
  turnId: `turn_bench_${n}`,
  itemId: `item_bench_${n}`,
});

/** Runs `3 × triples` scripted events end to end with authority and runner state under `dir`. */
export async function durableSend(dir: string, triples: number, n: number): Promise<DurableSend> {
  const id = benchIdentity(n);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const scriptPath = join(dir, "script.json");
  writeScript(scriptPath, `bench-triples-${triples}`, tripleSteps(triples));
  const committed: PrpEvent[] = [];
  const ingestedAt: number[] = [];
  const now = () => Number(process.hrtime.bigint()) / 1e6;
  const authority = AuthorityServer.open({
    stateDir: join(dir, "authority"),
    serverKey: ServerKey.generate(),
    runnerVersion: BUILD.version,
    runnerDigest: BUILD.digest,
    onCommittedEvent: (event) => {
      ingestedAt[event.sourceSeq] = now();
      committed.push(event);
    },
  });
  const probe = observeOutbox(now);
  try {
    await authority.listen(0);
    const registered = await authority.registerRun(id);
    if (!registered.ok) throw new Error(registered.error.message);
    for (const [type, payload] of [
      ["run.prepare", { workspace: "bench" }],
      ["session.open", { reuse: "new_per_run" }],
      ["turn.start", { text: "Play the bench script.", turnId: id.turnId }],
    ] as const) {
      const queued = await authority.queueCommand(id.runId, type, payload);
      if (!queued.ok) throw new Error(queued.error.message);
    }
    const ticket = await authority.issueBootstrapTicket(id.runId, 30_000);
    if (!ticket.ok) throw new Error(ticket.error.message);
    const log: string[] = [];
    const runner = new DurableRunner({
      identity: id,
      connectUrl: authority.connectUrl(id.runId),
      stateDir: join(dir, "runner"),
      bootstrapToken: ticket.value.token,
      runnerVersion: BUILD.version,
      runnerDigest: BUILD.digest,
      reconnectDelayMs: 50,
      driver: new FakeHarnessDriver({ scriptPath, delayMs: 0 }),
      log: (text) => log.push(text),
    });
    const start = process.hrtime.bigint();
    const outcome = await runner.run();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    if (outcome.code !== 0 || outcome.reason !== "run_delivered")
      throw new Error(`the run ended ${JSON.stringify(outcome)}:\n${log.join("\n")}`);
    // A reconnect would resend and skew every figure: the run must have been one clean connection.
    if (log.length > 0) throw new Error(`the runner logged:\n${log.join("\n")}`);
    const scripted = committed.filter((e) => e.eventType.startsWith("item.")).length;
    if (scripted !== 3 * triples)
      throw new Error(`${scripted} item events committed, not ${3 * triples}: were deltas coalesced?`);

    const ingestMs: number[] = [];
    const ackMs: number[] = [];
    const sendAckMs: number[] = [];
    for (const e of committed) {
      const admitted = probe.admittedAt[e.sourceSeq]!;
      ingestMs.push(ingestedAt[e.sourceSeq]! - admitted);
      ackMs.push(probe.ackedAt[e.sourceSeq]! - admitted);
      sendAckMs.push(probe.ackedAt[e.sourceSeq]! - probe.sentAt[e.sourceSeq]!);
    }
    const eventBytes = committed.reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e)), 0) / committed.length;
    return {
      events: committed.length,
      seconds,
      eventBytes,
      sample: committed.find((e) => e.eventType === "item.delta")!,
      ingestMs,
      ackMs,
      sendAckMs,
    };
  } finally {
    probe.restore();
    await authority.close();
  }
}
