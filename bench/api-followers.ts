/**
 * The SSE followers of `bench:api`, on a worker thread of their own so that their parsing is not
 * counted as the authority's: F clients each GET /v1/runs/{id}/events as text/event-stream with
 * the bearer token, record when each event arrived (performance.timeOrigin + performance.now(),
 * a clock the threads share) and check that every seq 1..N arrives exactly once and in order.
 * Each reports done at event N; the main thread ends the streams.
 */
import { request } from "node:http";
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { cpuMark, cpuSince } from "./cpu.js";

export interface FollowersPlan {
  /** http://HOST:PORT/v1/runs/{id}/events */
  url: string;
  token: string;
  followers: number;
  events: number;
}

export type FollowersMessage =
  | { kind: "connected" }
  /**
   * `arrivals[f][seq]`: when follower f received event seq (index 0 unused). `failures`: each
   * follower's first broken promise (a gap, a repeat, an event out of order), empty when none.
   * `cpuMicros`: this thread's CPU from go to done, by the kernel's count (null off Linux).
   */
  | { kind: "done"; arrivals: Float64Array[]; failures: string[]; cpuMicros: number | null }
  | { kind: "failed"; error: string };

/** Wall-clock milliseconds that compare across threads: each thread's timeOrigin is its own. */
export const stamp = (): number => performance.timeOrigin + performance.now();

interface Follower {
  /** Resolves once the stream's headers arrived. */
  opened: Promise<void>;
  /** Resolves at event N, or at the stream's end. */
  done: Promise<void>;
}

function follow(plan: FollowersPlan, n: number, arrivals: Float64Array, failures: string[]): Follower {
  let open!: () => void;
  let fail!: (err: Error) => void;
  const opened = new Promise<void>((resolve, reject) => ((open = resolve), (fail = reject)));
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  let last = 0;
  const broken = (why: string) => {
    if (failures[n] === "") failures[n] = `follower ${n}: ${why}`;
  };
  const req = request(
    plan.url,
    {
      agent: false,
      headers: { accept: "text/event-stream", authorization: `Bearer ${plan.token}` },
    },
    (res) => {
      if (res.statusCode !== 200) {
        fail(new Error(`follower ${n}: HTTP ${res.statusCode}`));
        res.resume();
        return;
      }
      open();
      res.setEncoding("utf8");
      let rest = "";
      res.on("data", (chunk: string) => {
        const at = stamp();
        const text = rest + chunk;
        let start = 0;
        for (let end = text.indexOf("\n\n"); end >= 0; end = text.indexOf("\n\n", start)) {
          // An event frame: "id: SEQ\nevent: prp\ndata: ENVELOPE"; keep-alives and the end frame carry no id.
          if (text.startsWith("id: ", start)) {
            const seq = Number(text.slice(start + 4, text.indexOf("\n", start)));
            if (seq !== last + 1) broken(`seq ${seq} after ${last}`);
            else if (!text.startsWith("data: {", text.indexOf("\n", text.indexOf("\n", start) + 1) + 1))
              broken(`seq ${seq} without its data line`);
            if (seq > 0 && seq <= plan.events) arrivals[seq] = at;
            last = Math.max(last, seq);
            if (seq === plan.events) finish();
          }
          start = end + 2;
        }
        rest = text.slice(start);
      });
      res.on("close", () => {
        if (last < plan.events) broken(`the stream closed after seq ${last}`);
        finish();
      });
    },
  );
  req.on("error", (err) => {
    fail(err);
    broken(err.message);
    finish();
  });
  req.end();
  return { opened, done };
}

async function runAll(port: NonNullable<typeof parentPort>, plan: FollowersPlan): Promise<void> {
  const arrivals = Array.from({ length: plan.followers }, () => new Float64Array(plan.events + 1));
  const failures = Array.from({ length: plan.followers }, () => "");
  const followers = Array.from({ length: plan.followers }, (_, n) => follow(plan, n, arrivals[n]!, failures));
  const mark = cpuMark();
  await Promise.all(followers.map((f) => f.opened));
  port.postMessage({ kind: "connected" } satisfies FollowersMessage);
  await Promise.all(followers.map((f) => f.done));
  port.postMessage(
    {
      kind: "done",
      arrivals,
      failures: failures.filter((f) => f !== ""),
      cpuMicros: cpuSince(mark).threadMicros,
    } satisfies FollowersMessage,
    arrivals.map((a) => a.buffer),
  );
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  runAll(port, workerData as FollowersPlan).catch((err: unknown) =>
    port.postMessage({ kind: "failed", error: String((err as Error)?.stack ?? err) } satisfies FollowersMessage),
  );
}
