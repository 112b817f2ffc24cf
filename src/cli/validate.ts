import type { Command } from "commander";
import { printableJson, visibleLines } from "./terminal-text.js";
import { bundleFileProblems, type NativeExecutionBundle } from "../bundle/native-execution.js";
import { readFileBounded } from "../contract/bounded-read.js";
import { decode } from "../contract/decode.js";
import { ALL_KINDS, isKind, type Kind } from "../contract/kinds.js";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import type { PrpEvent } from "../contract/kinds.js";
import { recordProblems } from "../bundle/record-check.js";

interface Verdict {
  file: string;
  ok: boolean;
  kind: string | null;
  code: string | null;
  path: string | null;
  message: string | null;
}

function verdictOf(file: string, kind: Kind | undefined, maxBytes: number, verifyFiles: boolean): Verdict {
  const read = readFileBounded(file, { maxBytes });
  if (!read.ok)
    return {
      file,
      ok: false,
      kind: null,
      code: read.error.code,
      path: read.error.code === "unreadable" ? null : read.error.path,
      message: read.error.message,
    };
  const result = decode(read.bytes, { ...(kind ? { kind } : {}), maxBytes });
  if (result.ok && result.kind === "native-execution") {
    const [problem] = bundleRecordProblems(result.value as NativeExecutionBundle);
    if (problem) return { file, ok: false, kind: result.kind, ...problem };
  }
  if (result.ok && verifyFiles && result.kind === "native-execution") {
    const [problem] = bundleFileProblems(file, result.value as NativeExecutionBundle);
    if (problem) {
      const at = problem.indexOf(": ");
      return {
        file,
        ok: false,
        kind: result.kind,
        code: "binding_mismatch",
        path: problem.slice(0, at),
        message: problem.slice(at + 2),
      };
    }
  }
  if (result.ok) return { file, ok: true, kind: result.kind, code: null, path: null, message: null };
  return {
    file,
    ok: false,
    kind: result.kind ?? null,
    code: result.error.code,
    path: result.error.path,
    message: result.error.message,
  };
}

/** A bundle's events are one run's record, and its terminal is that record's (see RecordCheck); a live run's starts at sourceSeq 1. */
function bundleRecordProblems(bundle: NativeExecutionBundle) {
  return recordProblems(
    bundle.events as PrpEvent[],
    { path: "/terminal", terminal: bundle.terminal },
    {
      pathOf: (i) => `/events/${i}`,
      ...(bundle.provenance === "live" ? { firstSeq: 1 } : {}),
    },
  );
}

function line(v: Verdict, expected: boolean): string {
  const mark = v.ok === expected ? "" : "  (unexpected)";
  if (v.ok) return `ok  ${v.kind}  ${v.file}${mark}`;
  return `rejected  ${v.code} at ${v.path || "/"}: ${v.message}  ${v.file}${mark}`;
}

export function registerValidate(program: Command): void {
  program
    .command("validate")
    .description("check PRP documents against the contract: schema, required versions and binding rules")
    .argument(
      "<file...>",
      "JSON files: events, commands, fixtures, results, terminals, bundles, question sets and responses, …",
    )
    .option("--json", "print one JSON object per file per line: {file, ok, kind, code, path, message}")
    .option("--expect <verdict>", "the verdict every file should get: accept or reject", "accept")
    .option(
      "--kind <kind>",
      `decode every file as this kind (needed for kinds without a discriminator). One of: ${ALL_KINDS.join(", ")}`,
    )
    .option(
      "--max-bytes <n>",
      "refuse files larger than this many bytes (reading stops one byte past it)",
      String(MAX_FRAME_BYTES),
    )
    .option(
      "--verify-files",
      "for a native execution bundle, also check that the transcript and artifacts beside it have the recorded digests and sizes",
    )
    .addHelpText(
      "after",
      `
The kind of each file comes from its "schema" discriminator (or "schemaVersion" for the
conformance pair); --kind names it for documents that have none (usage, provider-descriptor, …).

A native execution bundle's events must also be one run's record: the same run, session and
source throughout, sourceSeq contiguous (from 1 in a live bundle), every sourceEventId once
(an identical repeat too: a stored record holds each event once), exactly one run.terminal,
last, equal to the bundle's "terminal". A break is reported with its code (sequence_gap,
duplicate_event_id, second_terminal, terminal_mismatch, …) and the event's path.

Exit status: 0 when every file got the expected verdict, 1 otherwise, 2 on bad usage.

Examples:
  prp validate protocol/fixtures/replay/happy-path.json
  prp validate --json protocol/fixtures/replay/*.json
  prp validate --expect reject protocol/fixtures/replay/unsupported-required-version.json
  prp validate --kind usage usage-report.json
  prp validate --verify-files --max-bytes 16777216 .prp/runs/<runId>/native-execution.json`,
    )
    .action(
      (
        files: string[],
        opts: { json?: boolean; expect: string; kind?: string; maxBytes: string; verifyFiles?: boolean },
      ) => {
        if (opts.expect !== "accept" && opts.expect !== "reject")
          program.error(`--expect takes accept or reject, not "${opts.expect}"`, { exitCode: 2 });
        if (opts.kind !== undefined && !isKind(opts.kind))
          program.error(`unknown --kind "${opts.kind}"; one of: ${ALL_KINDS.join(", ")}`, { exitCode: 2 });
        const maxBytes = Number(opts.maxBytes);
        if (!Number.isSafeInteger(maxBytes) || maxBytes < 1)
          program.error(`--max-bytes takes a positive integer, not "${opts.maxBytes}"`, { exitCode: 2 });
        const expected = opts.expect === "accept";
        let allAsExpected = true;
        for (const file of files) {
          const v = verdictOf(file, opts.kind as Kind | undefined, maxBytes, opts.verifyFiles === true);
          if (v.ok !== expected) allAsExpected = false;
          // A bundle's problems quote what its events hold: controls made visible.
          console.log(opts.json ? printableJson(JSON.stringify(v)) : visibleLines(line(v, expected)));
        }
        process.exitCode = allAsExpected ? 0 : 1;
      },
    );
}
