import { Registry, collectDefaultMetrics } from "prom-client";
import type { HealthSource } from "./health.js";
import { registerRunnerGauges } from "./runner-gauges.js";
import { readRunnerFigures } from "./runner-state-figures.js";

/**
 * `prp-runnerd --health-addr`: the runner gauges of its own state folder (durable mode), and
 * readiness = its run is under way and (durable) its state is readable. `stateDir` is
 * undefined in local mode, which has no durable state to show.
 */
export function runnerdHealth(stateDir: string | undefined, runEnded: () => boolean): HealthSource {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "prp_" });
  registerRunnerGauges(registry, () => (stateDir === undefined ? [] : [stateDir]));
  return {
    registry,
    readiness: [
      {
        name: "run",
        check: async () => {
          if (runEnded()) return "the run is over; the runner is exiting";
          if (stateDir !== undefined && readRunnerFigures(stateDir) === null)
            return "the runner state is not readable yet";
          return null;
        },
      },
    ],
  };
}
