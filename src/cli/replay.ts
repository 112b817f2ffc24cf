import type { Command } from "commander";
import { readFileBounded, readStreamBounded } from "../contract/bounded-read.js";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import { MAX_EVENT_STREAM_BYTES } from "../reducer/event-stream.js";
import { paritySummary, prettyJson, replayEventStream, replayFixture, type Replayed } from "../reducer/index.js";
import { replayReport } from "./replay-report.js";
import { printableJson } from "./terminal-text.js";

interface ReplayOptions {
  events?: string;
  json?: boolean;
  summary?: boolean;
}

/** Prints a rejection as "source: [line N: ]code at path: message" and fails the command. */
function reject(source: string, error: { code: string; path: string; message: string; line?: number }): void {
  const line = error.line === undefined ? "" : `line ${error.line}: `;
  console.error(`${source}: ${line}${error.code} at ${error.path || "/"}: ${error.message}`);
  process.exitCode = 1;
}

export function registerReplay(program: Command): void {
  program
    .command("replay")
    .description("reduce a replay fixture, or a stream of events, to the session a control plane shows")
    .argument("[file]", "a replay fixture (paperclip.prp.fixture.v1)")
    .option(
      "--events <file>",
      "read an NDJSON event stream instead of a fixture: one event envelope per line; - reads stdin",
    )
    .option("--json", "print the session snapshot (paperclip.prp.session-snapshot.v1) as 2-space JSON")
    .option("--summary", "print the parity summary, byte-identical to the fixture's golden summary file")
    .addHelpText(
      "after",
      `
Without --json or --summary, prints for a person: the timeline (position, source:seq, event
type, summary) with gaps and repeated deliveries marked where they happened, then session, turn
and run state, integrity (gaps, duplicates, out-of-order events) and the result.

An event stream carries no fixture name, identity or capabilities: those snapshot fields are
null, and so is the summary's runId. Each event is admitted as the authority admits one (the
codec, and a canonical JSON form); the events must belong to one run and one session, and a
repeated sourceEventId must repeat the same canonical bytes.

A fixture may have up to ${MAX_FRAME_BYTES} bytes; an event stream up to ${MAX_EVENT_STREAM_BYTES}, each
line up to ${MAX_FRAME_BYTES}. Reading stops at the first byte past a limit.

Exit status: 0 when the input was replayed, 1 when it is rejected (printed as
"code at path: message", with the line number for a stream), 2 on bad usage.

Examples:
  prp replay protocol/fixtures/replay/source-gap.json
  prp replay --summary protocol/fixtures/replay/happy-path.json
  prp replay --json protocol/fixtures/replay/duplicate-event.json
  prp replay --events run-events.ndjson
  prp run --json --script happy-path | prp replay --events -`,
    )
    .action(async (file: string | undefined, opts: ReplayOptions) => {
      if ((file === undefined) === (opts.events === undefined))
        program.error("give either a fixture FILE or --events FILE|-, not both or neither", { exitCode: 2 });
      if (opts.json && opts.summary)
        program.error("--json and --summary each print one document; choose one", { exitCode: 2 });
      const path = opts.events ?? file!;
      const source = path === "-" ? "stdin" : path;
      // A fixture is one frame; a stream is many, one a line, under a bound of its own.
      const limits =
        opts.events === undefined
          ? { maxBytes: MAX_FRAME_BYTES }
          : { maxBytes: MAX_EVENT_STREAM_BYTES, maxLineBytes: MAX_FRAME_BYTES };
      const read =
        path === "-" ? await readStreamBounded(process.stdin, source, limits) : readFileBounded(path, limits);
      if (!read.ok) return reject(source, read.error);
      const replayed: Replayed = opts.events === undefined ? replayFixture(read.bytes) : replayEventStream(read.bytes);
      if (!replayed.ok) return reject(source, replayed.error);
      const { snapshot, events } = replayed;
      // JSON escapes what JSON.stringify leaves raw; the value is unchanged (the report escapes its own).
      process.stdout.write(
        opts.json
          ? printableJson(prettyJson(snapshot))
          : opts.summary
            ? printableJson(prettyJson(paritySummary(snapshot)))
            : replayReport(snapshot, events),
      );
    });
}
