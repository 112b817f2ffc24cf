import { Gauge, type Registry } from "prom-client";
import { readRunnerFigures, type RunnerFigures } from "./runner-state-figures.js";

const FIGURES: ReadonlyArray<{ name: string; help: string; key: keyof RunnerFigures }> = [
  {
    name: "prp_runner_outbox_events",
    help: "Events in the outboxes of the runners hosted here, not yet acknowledged",
    key: "outboxEvents",
  },
  { name: "prp_runner_outbox_bytes", help: "Bytes in the outboxes of the runners hosted here", key: "outboxBytes" },
  {
    name: "prp_runner_reconnects",
    help: "Redials of the runners hosted here, over their runs so far",
    key: "reconnects",
  },
  { name: "prp_runner_events_emitted", help: "Events the runners hosted here numbered so far", key: "eventsEmitted" },
];

/**
 * Gauges of the runners a process hosts now (a worker's running runs, runnerd's one), summed
 * over their state folders and read on each scrape. Gauges, not counters: a runner that ends
 * takes its figures with it. Harness restarts are not among them: the runner's state does not
 * keep them, and the authority counts them from the committed events (docs/deployment.md).
 */
export function registerRunnerGauges(registry: Registry, stateDirs: () => readonly string[]): void {
  let read: { figures: RunnerFigures[] } | null = null;
  const figures = () => (read ??= { figures: stateDirs().flatMap((d) => readRunnerFigures(d) ?? []) }).figures;
  for (const f of FIGURES)
    new Gauge({
      name: f.name,
      help: f.help,
      registers: [registry],
      collect() {
        // One read of the states per scrape, shared by the four gauges; the first of them reads.
        if (f === FIGURES[0]) read = null;
        this.set(figures().reduce((n, r) => n + r[f.key], 0));
      },
    });
}
