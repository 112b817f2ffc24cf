/**
 * The silent runners of `bench:idle`, in a process of their own so that their CPU is not the
 * authority's: each dials, completes the real handshake (bootstrap ticket, sealed welcome) and
 * then does only what an idle runner does: its WebSocket answers each of the authority's pings
 * with a pong, and its `LeaseKeeper` renews the lease halfway through each. The parent sends
 * plans in chunks over IPC; this process answers how many connected, and how many pings they
 * have heard and renewals they got so far.
 */
import type { RunIdentity } from "../src/authority/identity.js";
import {
  dial,
  openRunnerChannel,
  parseConnectUrl,
  resolveEndpoint,
  systemTimers,
  type RunnerToCoreKind,
  type SecureChannel,
} from "../src/transport/index.js";
import { LeaseKeeper } from "../src/runner/durable/lease-keeper.js";
import { BUILD } from "./durable-send.js";

export interface IdlePlan {
  url: string;
  id: RunIdentity;
  token: string;
}

export type IdleRequest = { kind: "connect"; plans: IdlePlan[] } | { kind: "count" } | { kind: "close" };
export type IdleReply =
  | { kind: "connected"; total: number }
  | { kind: "count"; pings: number; renewals: number; closed: number; welcomeIntervalMs: number | null }
  | { kind: "failed"; error: string };

/** Handshakes in flight at once: under the authority's admission cap for one address. */
const CONCURRENCY = 32;
/** A dial that timed out on a busy authority is tried again; its ticket was not used. */
const DIAL_ATTEMPTS = 5;

const channels: Array<SecureChannel<RunnerToCoreKind>> = [];
let pings = 0;
let renewals = 0;
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
  ws.value.on("ping", () => void pings++);
  let keeper: LeaseKeeper | null = null;
  const opened = await openRunnerChannel(ws.value, {
    credential: { kind: "bootstrap", token },
    identity: id,
    runnerVersion: BUILD.version,
    runnerDigest: BUILD.digest,
    resume: { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 },
    handlers: {
      onEnvelope: (envelope) => {
        if (envelope.kind !== "lease_renewed") return;
        renewals++;
        keeper?.renewed(envelope.payload);
      },
      onClose: () => {
        keeper?.stop();
        closed++;
      },
    },
  });
  if (!opened.ok) throw new Error(`${id.runId}: ${opened.error.code}: ${opened.error.message}`);
  const { channel, welcome } = opened.value;
  welcomeIntervalMs = welcome.payload.heartbeatIntervalMs;
  // The runner's own keeper: halfway through each lease it renews, as a durable runner does.
  keeper = new LeaseKeeper({
    channel,
    lease: welcome.lease,
    renewalVersion: welcome.payload.connectionLeaseRenewalVersion,
    timers: systemTimers,
    onLease: () => {},
  });
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
    reply({ kind: "count", pings, renewals, closed, welcomeIntervalMs });
  } else {
    for (const c of channels) c.close();
    process.disconnect();
  }
});
