/**
 * The runners of `bench:authority`, on a worker thread of their own: each dials the authority,
 * completes the real handshake and, once the main thread says go, sends events 1..M keeping up
 * to MAX_BATCH_EVENTS in flight, timing each event's send and ACK on the process's monotonic
 * clock (the same one the main thread reads). Every runner connects before any sends.
 */
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import type { RunIdentity } from "../src/authority/identity.js";
import { MAX_BATCH_EVENTS, dial, openRunnerChannel, parseConnectUrl, resolveEndpoint } from "../src/transport/index.js";
import { cpuMark, cpuSince } from "./cpu.js";
import { BUILD } from "./durable-send.js";

export interface RunnerPlan {
  url: string;
  id: RunIdentity;
  token: string;
}

export type RunnersMessage =
  | { kind: "connected" }
  /** `cpuMicros`: this thread's CPU from go to done, by the kernel's count (null off Linux). */
  | { kind: "done"; sentAt: Array<[string, number]>; ackedAt: Array<[string, number]>; cpuMicros: number | null }
  | { kind: "failed"; error: string };

export const now = (): number => Number(process.hrtime.bigint()) / 1e6;
export const key = (runId: string, seq: number): string => `${runId}#${seq}`;

/** A v1 item.delta of the run, as its runner sends it. */
export const benchEvent = (id: RunIdentity, seq: number): Record<string, unknown> => ({
  schema: "paperclip.prp.event.v1",
  sourceEventId: `event_${id.runnerInstanceId}_${String(seq).padStart(16, "0")}`,
  sourceSeq: seq,
  sourceInstanceId: id.runnerInstanceId,
  sourceKind: "runner",
  runId: id.runId,
  normalizedSessionId: id.normalizedSessionId,
  turnId: id.turnId,
  itemId: id.itemId,
  eventType: "item.delta",
  schemaVersion: 1,
  priority: 2,
  emittedAt: new Date().toISOString(),
  payload: { text: `token ${seq} ` },
});

/** One runner, connected; `run()` sends its events and settles at its last ACK. */
async function connectOne(
  { url, id, token }: RunnerPlan,
  events: number,
  sentAt: Map<string, number>,
  ackedAt: Map<string, number>,
): Promise<{ run: () => Promise<void> }> {
  const endpoint = parseConnectUrl(url);
  if (!endpoint.ok) throw new Error(endpoint.error.message);
  const resolved = await resolveEndpoint(endpoint.value);
  if (!resolved.ok) throw new Error(resolved.error.message);
  const ws = await dial(resolved.value);
  if (!ws.ok) throw new Error(ws.error.message);
  let finish!: (err?: Error) => void;
  const done = new Promise<void>((resolve, reject) => (finish = (err) => (err ? reject(err) : resolve())));
  let next = 1;
  let acked = 0;
  let send = (): void => undefined;
  const opened = await openRunnerChannel(ws.value, {
    credential: { kind: "bootstrap", token },
    identity: id,
    runnerVersion: BUILD.version,
    runnerDigest: BUILD.digest,
    resume: { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 },
    handlers: {
      onEnvelope: (envelope) => {
        if (envelope.kind !== "ack") return;
        const at = now();
        const upTo = envelope.payload.ackedSourceSeq as number;
        for (let seq = acked + 1; seq <= upTo; seq++) ackedAt.set(key(id.runId, seq), at);
        acked = upTo;
        if (acked === events) finish();
        else send();
      },
      onClose: (diagnostic) =>
        finish(diagnostic ? new Error(`${id.runId}: ${diagnostic.code}: ${diagnostic.message}`) : undefined),
    },
  });
  if (!opened.ok) throw new Error(opened.error.message);
  const open = opened.value.channel;
  send = () => {
    for (; next <= events && next - acked <= MAX_BATCH_EVENTS; next++) {
      sentAt.set(key(id.runId, next), now());
      open.send("event", { event: benchEvent(id, next) });
    }
  };
  return {
    run: async () => {
      send();
      try {
        await done;
      } finally {
        open.close();
      }
    },
  };
}

async function runAll(port: NonNullable<typeof parentPort>, plans: RunnerPlan[], events: number): Promise<void> {
  const sentAt = new Map<string, number>();
  const ackedAt = new Map<string, number>();
  const runners = await Promise.all(plans.map((plan) => connectOne(plan, events, sentAt, ackedAt)));
  const go = new Promise((resolve) => port.once("message", resolve));
  port.postMessage({ kind: "connected" } satisfies RunnersMessage);
  await go;
  const mark = cpuMark();
  await Promise.all(runners.map((r) => r.run()));
  port.postMessage({
    kind: "done",
    sentAt: [...sentAt],
    ackedAt: [...ackedAt],
    cpuMicros: cpuSince(mark).threadMicros,
  } satisfies RunnersMessage);
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  const { runners, events } = workerData as { runners: RunnerPlan[]; events: number };
  runAll(port, runners, events).catch((err: unknown) =>
    port.postMessage({ kind: "failed", error: String((err as Error)?.stack ?? err) } satisfies RunnersMessage),
  );
}
