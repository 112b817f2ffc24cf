import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import type { AuthorityStore, LoggedEvent } from "../authority/store.js";
import type { PrpEvent } from "../contract/kinds.js";
import { eventRow } from "./event-line.js";
import { printableJson } from "./terminal-text.js";
import { refusal, runAction, withStore, withStoreOptions, type StoreOptions } from "./authority-options.js";
import { parsePositiveInt } from "./options.js";
import { apiClient, viaApi, withApiOptions, type ApiOptions } from "./api-target.js";
import type { PrpClient } from "../client/index.js";

interface EventsOptions extends StoreOptions, ApiOptions {
  run: string;
  follow?: boolean;
  json?: boolean;
  pollMs: number;
}

/** Rows read from the log per query: a long run is printed in pages, never read whole. */
const PAGE = 500;

export function registerEvents(program: Command): void {
  withApiOptions(
    withStoreOptions(
      program.command("events").description("print a run's committed events, in order, from the authority's run log"),
    ),
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
Reads the store directly, beside a running daemon; with --api URL --token-file F, through the
authority's HTTP API instead (a read token is enough; --follow then streams, resuming a cut
connection where it stopped). Exit 0; 1 for an unknown run; 130 when
--follow is stopped by Ctrl-C before the run's terminal.

Examples:
  prp events --store sqlite:/var/lib/prp/authority --server-key-file key --run run_1
  prp events --run run_1 --follow --json | prp replay --events -`,
    )
    .action((opts: EventsOptions, command: Command) =>
      runAction(() => {
        const client = apiClient(opts, command);
        return client ? printApiEvents(client, opts) : withStore(opts, (store) => printEvents(store, opts));
      }),
    );
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
      for (const row of rows) printRow(row, opts.json === true);
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

/**
 * The same through the API: pages until the run's end, or with --follow its event stream (which
 * resumes a cut connection from the last event printed, and ends after run.terminal).
 */
async function printApiEvents(client: PrpClient, opts: EventsOptions): Promise<number> {
  const json = opts.json === true;
  if (opts.follow) {
    const stop = new AbortController();
    const onInterrupt = () => stop.abort();
    process.once("SIGINT", onInterrupt);
    try {
      let ended = false;
      await viaApi(async () => {
        for await (const { seq, event } of client.follow(opts.run, { signal: stop.signal })) {
          print(seq, event, json);
          ended ||= event.eventType === "run.terminal";
        }
      });
      return ended ? 0 : 130;
    } finally {
      process.off("SIGINT", onInterrupt);
    }
  }
  let after = 0;
  for (;;) {
    const page = await viaApi(() => client.events(opts.run, { after, limit: PAGE }));
    for (const { seq, event } of page.events) print(seq, event, json);
    if (page.ended || page.events.length === 0) return 0;
    after = page.next;
  }
}

function printRow(row: LoggedEvent, json: boolean): void {
  if (json) return void process.stdout.write(`${printableJson(row.envelope)}\n`);
  print(row.sourceSeq, JSON.parse(row.envelope) as PrpEvent, false);
}

/** One event: its committed JSON (the API's are canonical JSON, so re-serialised they are the same text), or a line. */
function print(seq: number, event: PrpEvent, json: boolean): void {
  if (json) return void process.stdout.write(`${printableJson(JSON.stringify(event))}\n`);
  process.stdout.write(`${eventRow(seq, event)}\n`);
}
