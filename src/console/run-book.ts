import type { PrpEvent } from "../contract/kinds.js";
import { applyEvents } from "../reducer/apply-event.js";
import { createSnapshot } from "../reducer/snapshot.js";
import type { CommandReceipt, RunRow, RunView } from "./api-types.js";
import type { BundleFiles } from "./bundle-files.js";
import { runRow } from "./run-row.js";
import type { RunSource } from "./run-source.js";

/** What changed in one refresh: the runs with new events (or new), and whether the list changed. */
export interface Changes {
  runs: Set<string>;
}

/**
 * The console's copy of each run's events, read from the source incrementally (each refresh
 * reads only what was committed since the last), and the views built from it.
 */
export class RunBook {
  private readonly events = new Map<string, PrpEvent[]>();
  private readonly commandText = new Map<string, string>();

  constructor(
    readonly source: RunSource,
    private readonly bundles: BundleFiles | undefined,
  ) {}

  /** Reads what is new in the source; returns the runs that changed (new events or command status). */
  async refresh(): Promise<Changes> {
    const runs = new Set<string>();
    for (const runId of await this.source.runIds()) {
      const known = this.events.get(runId) ?? [];
      const fresh = (await this.source.eventsAfter(runId, known.length)) ?? [];
      if (fresh.length > 0 || !this.events.has(runId)) runs.add(runId);
      this.events.set(runId, known.concat(fresh));
      if (this.source.live && !this.ended(runId)) {
        const text = JSON.stringify(await this.source.commands(runId));
        if (text !== this.commandText.get(runId)) runs.add(runId);
        this.commandText.set(runId, text);
      }
    }
    return { runs };
  }

  has(runId: string): boolean {
    return this.events.has(runId);
  }

  ended(runId: string): boolean {
    return (this.events.get(runId) ?? []).some((e) => e.eventType === "run.terminal");
  }

  /** Events after position `after` (1-based positions). */
  eventsAfter(runId: string, after: number): PrpEvent[] {
    return (this.events.get(runId) ?? []).slice(Math.max(0, after));
  }

  rows(): RunRow[] {
    return [...this.events].map(([runId, events]) => runRow(runId, events)).sort((a, b) => (b.startedAt ?? "").localeCompare(a.startedAt ?? "") || a.runId.localeCompare(b.runId));
  }

  /** The run's page at position `upto` (default: every event so far). */
  async view(runId: string, upto?: number): Promise<RunView> {
    const all = this.events.get(runId) ?? [];
    const position = upto === undefined ? all.length : Math.min(Math.max(0, upto), all.length);
    const commands: CommandReceipt[] = await this.source.commands(runId);
    return {
      run: runRow(runId, all),
      position,
      session: applyEvents(createSnapshot(this.source.origin(runId)), all.slice(0, position)),
      commands,
      artifacts: this.bundles?.list(runId) ?? [],
      live: this.source.live,
    };
  }
}
