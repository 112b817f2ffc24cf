import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import type { AuthorityStore, LoggedEvent } from "../authority/store.js";
import type { PrpEvent } from "../contract/kinds.js";
import { eventSummary } from "./event-line.js";
import { printableJson, visible } from "./terminal-text.js";
import { refusal, runAction, withStore, withStoreOptions, type StoreOptions } from "./authority-options.js";
import { parsePositiveInt } from "./options.js";

interface EventsOptions extends StoreOptions {
  run: string;
  follow?: boolean;
  json?: boolean;
  pollMs: number;
}

/** Rows read from the log per query: a long run is printed in pages, never read whole. */
const PAGE = 500;

export function registerEvents(program: Command): void {
  withStoreOptions(
    program.command("events").description("print a run's committed events, in order, from the authority's run log"),
  )
    .requiredOption("--run <id>", "the run")
    .option(
      "--follow",
      "keep printing new events as the authority commits them, until the run's run.terminal (or Ctrl-C)",
    )
    .option(
      "--json",
      "one PRP event per line (NDJSON), the committed JSON with C1, DEL and bidi characters \\u-escaped (the same values): pipe it to prp replay --events -",
    )
    .option("--poll-ms <n>", "with --follow: how often to read the log", parsePositiveInt, 200)
    .addHelpText(
      "after",
      `
Reads the store directly, beside a running daemon. Exit 0; 1 for an unknown run; 130 when
--follow is stopped by Ctrl-C before the run's terminal.

Examples:
  prp events --store sqlite:/var/lib/prp/authority --server-key-file key --run run_1
  prp events --run run_1 --follow --json | prp replay --events -`,
    )
    .action((opts: EventsOptions) => runAction(() => withStore(opts, (store) => printEvents(store, opts))));
}

async function printEvents(store: AuthorityStore, opts: EventsOptions): Promise<number> {
  if (!(await store.run(opts.run)))
    throw refusal({
      code: "unknown_run",
      path: "/runId",
      message: `no run ${opts.run} in this store (prp authority runs lists them)`,
    });
  let interrupted = false;
  const onInterrupt = () => void (interrupted = true);
  process.once("SIGINT", onInterrupt);
  try {
    let after = 0;
    for (;;) {
      const rows = await store.eventLog(opts.run, after, PAGE);
      for (const row of rows) print(row, opts.json === true);
      after = rows.at(-1)?.sourceSeq ?? after;
      if (rows.some((r) => r.eventType === "run.terminal")) return 0;
      if (rows.length === PAGE) continue;
      if (!opts.follow) return 0;
      if (interrupted) return 130;
      await sleep(opts.pollMs);
      if (interrupted) return 130;
    }
  } finally {
    process.off("SIGINT", onInterrupt);
  }
}

function print(row: LoggedEvent, json: boolean): void {
  if (json) return void process.stdout.write(`${printableJson(row.envelope)}\n`);
  const event = JSON.parse(row.envelope) as PrpEvent;
  process.stdout.write(
    `${String(row.sourceSeq).padStart(4)}  ${visible(row.eventType).padEnd(28)} ${eventSummary(event)}\n`,
  );
}
