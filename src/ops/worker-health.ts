import { join } from "node:path";
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import type { PollFunction } from "../worker/poll-loop.js";
import type { StartClaim } from "../worker/start-claim.js";
import type { HealthSource } from "./health.js";
import { registerRunnerGauges } from "./runner-gauges.js";

/** What of the worker's loop the endpoints look at, once it exists. */
export interface WorkerProbe {
  readonly held: string[];
  readonly halted: boolean;
}

/** A worker is ready while its last answered poll is at most this old (a poll waits 30 s at most). */
export const POLL_FRESH_MS = 60_000;

/**
 * `prp worker --health-addr`: metrics of its polls and runners, and readiness = the authority
 * answered a poll (the credential is registered and accepted) within POLL_FRESH_MS and has not
 * refused it since. `wrap` puts the counting around the loop's own poll and start functions.
 */
export function workerHealth(dir: string, probe: () => WorkerProbe | undefined, now: () => number = Date.now) {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry, prefix: "prp_" });
  let lastAnswered: number | null = null;
  const polls = new Counter({
    name: "prp_worker_polls_total",
    help: "Polls of the authority by outcome: answered or failed",
    labelNames: ["outcome"],
    registers,
  });
  const started = new Counter({
    name: "prp_worker_runners_started_total",
    help: "prp-runnerd processes this worker started for its claims",
    registers,
  });
  new Gauge({
    name: "prp_worker_runners",
    help: "Runners of this worker alive now",
    registers,
    collect() {
      this.set(probe()?.held.length ?? 0);
    },
  });
  registerRunnerGauges(registry, () => (probe()?.held ?? []).map((runId) => join(dir, "state", runId)));
  const source: HealthSource = {
    registry,
    readiness: [
      {
        name: "authority_poll",
        check: async () => {
          if (probe()?.halted) return "the authority refused this worker's credential";
          if (lastAnswered === null) return "no poll answered yet";
          const age = now() - lastAnswered;
          return age <= POLL_FRESH_MS ? null : `the last answered poll is ${Math.round(age / 1000)} s old`;
        },
      },
    ],
  };
  return {
    source,
    wrapPoll:
      (poll: PollFunction): PollFunction =>
      async (body, signal) => {
        try {
          const answer = await poll(body, signal);
          lastAnswered = now();
          polls.inc({ outcome: "answered" });
          return answer;
        } catch (err) {
          polls.inc({ outcome: "failed" });
          throw err;
        }
      },
    wrapStart:
      (start: StartClaim): StartClaim =>
      async (claim) => {
        const runner = await start(claim);
        started.inc();
        return runner;
      },
  };
}
