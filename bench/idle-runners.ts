/**
 * The silent runners of `bench:idle`, in a process of their own so that their CPU is not the
 * authority's: each dials, completes the real handshake (bootstrap ticket, sealed welcome) and
 * then only answers pings, as an idle runner does. The parent sends plans in chunks over IPC;
 * this process answers how many connected, and how many pings it has heard so far.
 */
import type { RunIdentity } from "../src/authority/identity.js";
import {
  dial,
  openRunnerChannel,
  parseConnectUrl,
  resolveEndpoint,
  type RunnerToCoreKind,
  type SecureChannel,
} from "../src/transport/index.js";
import { BUILD } from "./durable-send.js";

export interface IdlePlan {
  url: string;
  id: RunIdentity;
  token: string;
}

export type IdleRequest = { kind: "connect"; plans: IdlePlan[] } | { kind: "count" } | { kind: "close" };
export type IdleReply =
  | { kind: "connected"; total: number }
  | { kind: "count"; pings: number; closed: number; welcomeIntervalMs: number | null }
  | { kind: "failed"; error: string };

/** Handshakes in flight at once: under the authority's admission cap for one address. */
const CONCURRENCY = 32;
/** A dial that timed out on a busy authority is tried again; its ticket was not used. */
const DIAL_ATTEMPTS = 5;

const channels: Array<SecureChannel<RunnerToCoreKind>> = [];
let pings = 0;
let closed = 0;
let welcomeIntervalMs: number | null = null;

async function connectOne({ url, id, token }: IdlePlan): Promise<void> {
  const endpoint = parseConnectUrl(url);
  if (!endpoint.ok) throw new Error(endpoint.error.message);
  const resolved = await resolveEndpoint(endpoint.value);
  if (!resolved.ok) throw new Error(resolved.error.message);
  let ws = await dial(resolved.value);
  for (let attempt = 1; !ws.ok && attempt < DIAL_ATTEMPTS; attempt++) ws = await dial(resolved.value);
  if (!ws.ok) throw new Error(`after ${channels.length} connected: ${ws.error.message}`);
  let channel: SecureChannel<RunnerToCoreKind> | null = null;
  const opened = await openRunnerChannel(ws.value, {
    credential: { kind: "bootstrap", token },
    identity: id,
    runnerVersion: BUILD.version,
    runnerDigest: BUILD.digest,
    resume: { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 },
    handlers: {
      onEnvelope: (envelope) => {
        if (envelope.kind !== "ping") return;
        pings++;
        channel?.send("pong", { lifecycle: "ready", outboxBytes: 0, ackedSourceSeq: 0 });
      },
      onClose: () => void closed++,
    },
  });
  if (!opened.ok) throw new Error(`${id.runId}: ${opened.error.code}: ${opened.error.message}`);
  channel = opened.value.channel;
  welcomeIntervalMs = opened.value.welcome.payload.heartbeatIntervalMs;
  channels.push(channel);
}

async function connectAll(plans: IdlePlan[]): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < plans.length) await connectOne(plans[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, plans.length) }, lane));
}

const reply = (message: IdleReply): void => void process.send?.(message);

process.on("message", (request: IdleRequest) => {
  if (request.kind === "connect") {
    connectAll(request.plans).then(
      () => reply({ kind: "connected", total: channels.length }),
      (err: unknown) => reply({ kind: "failed", error: String((err as Error)?.stack ?? err) }),
    );
  } else if (request.kind === "count") {
    reply({ kind: "count", pings, closed, welcomeIntervalMs });
  } else {
    for (const c of channels) c.close();
    process.disconnect();
  }
});
