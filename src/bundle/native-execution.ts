import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { canonicalDigest, sha256Digest } from "../contract/digest.js";
import { encode } from "../contract/encode.js";
import type * as T from "../contract/generated/types.js";
import type { PrpEvent } from "../contract/kinds.js";
import { packageRoot } from "../contract/package-root.js";
import { contentRefOf, contentRefProblems, type ContentRef } from "./content-ref.js";

export type NativeExecutionBundle = T.PaperclipRunnerNativeExecutionBundle;
export const BUNDLE_FILE = "native-execution.json";

export interface BundleInput {
  runId: string;
  /** The case: the script's name. */
  caseId: string;
  attemptId: string;
  scriptBytes: Uint8Array;
  /** Everything that shaped the run besides the script (flags, limits); its digest is the config id. */
  config: Record<string, unknown>;
  events: PrpEvent[];
  durationMs: number;
  driverKind: string;
}

const isTerminal = (e: PrpEvent) => e.eventType === "run.terminal";
const payloadOf = (e: PrpEvent) => e.payload as Record<string, unknown>;

/** Semantic tool receipts of the run, grouped as the bundle lists them. */
function semanticTools(events: PrpEvent[]): NativeExecutionBundle["semanticTools"] {
  const receipts = events.map((e) => payloadOf(e).semantic_tool).filter((r): r is Record<string, unknown> => r !== null && typeof r === "object");
  const results = receipts.filter((r) => r.phase !== "input");
  return { definitions: [], calls: receipts.filter((r) => r.phase === "input"), results, denials: results.filter((r) => r.outcome === "denied") };
}

/** Token and request totals from usage.reported events (cumulative, so the last one per provider counts). */
function usage(events: PrpEvent[], durationMs: number): NativeExecutionBundle["usage"] {
  const last = new Map<string, Record<string, number>>();
  for (const e of events) {
    if (e.eventType !== "usage.reported") continue;
    const p = payloadOf(e);
    if (p.cumulative && typeof p.cumulative === "object") last.set(String(p.provider), p.cumulative as Record<string, number>);
  }
  const sum = (key: string) => [...last.values()].reduce((n, m) => n + (Number.isSafeInteger(m[key]) ? m[key]! : 0), 0);
  const inputTokens = sum("inputTokens");
  const outputTokens = sum("outputTokens");
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens, requestCount: sum("requests"), durationMs: Math.max(0, Math.round(durationMs)), cost: null };
}

/**
 * Writes `<dir>/native-execution.json` (`paperclip-runner/native-execution/v1`, seed 000) with
 * the transcript and artifacts beside it as content references, and returns its path. The
 * bundle is checked against the contract before it is written.
 */
/**
 * Why a run gets no bundle, or null: a bundle carries v1 events only (wire.md O10), so a run
 * that reported an event of a later version (a session goal) has none until a format for v2/v3
 * streams is decided.
 */
export function bundleRefusal(events: readonly PrpEvent[]): string | null {
  const later = events.find((e) => e.schemaVersion !== 1);
  return later ? `none: ${later.eventType} is a v${later.schemaVersion} event, and a native execution bundle carries v1 events only` : null;
}

/** The run's terminal payload, from its run.terminal event. */
export const terminalOf = (events: readonly PrpEvent[]): T.PRPRunTerminal | undefined => events.find(isTerminal)?.payload as unknown as T.PRPRunTerminal | undefined;

export function writeNativeExecutionBundle(dir: string, input: BundleInput): { path: string; bundle: NativeExecutionBundle } {
  mkdirSync(join(dir, "artifacts"), { recursive: true });
  const put = (uri: string, bytes: Uint8Array, mediaType: string): ContentRef => {
    writeFileSync(join(dir, uri), bytes);
    return contentRefOf(uri, bytes, mediaType);
  };
  const transcriptBytes = Buffer.from(input.events.map((e) => `${JSON.stringify(e)}\n`).join(""));
  const transcript = put("transcript.ndjson", transcriptBytes, "application/x-ndjson");
  const terminalEvent = input.events.find(isTerminal);
  if (!terminalEvent) throw new Error("a run without run.terminal has no bundle");
  const terminal = terminalEvent.payload as unknown as T.PRPRunTerminal;
  const result = input.events.find((e) => e.eventType === "run.result.proposed");
  const exited = input.events.find((e) => e.eventType === "harness.exited");
  const artifacts = [
    put("artifacts/script.json", input.scriptBytes, "application/json"),
    ...(result ? [put("artifacts/result.json", Buffer.from(`${JSON.stringify(result.payload, null, 2)}\n`), "application/json")] : []),
    ...(exited ? [put("artifacts/harness-log.txt", Buffer.from(((payloadOf(exited).log as { lines?: string[] })?.lines ?? []).map((l) => `${l}\n`).join("")), "text/plain; charset=utf-8")] : []),
  ];
  const artifactRoot = put("artifacts.json", Buffer.from(`${JSON.stringify(artifacts, null, 2)}\n`), "application/json");
  const reconciliation = terminal.reconciliation;
  const bundle: NativeExecutionBundle = {
    schema: "paperclip-runner/native-execution/v1",
    provenance: "live",
    identity: { runId: input.runId, caseId: input.caseId, configId: canonicalDigest(input.config), attemptId: input.attemptId },
    input: { caseSha256: sha256Digest(input.scriptBytes), configSha256: canonicalDigest(input.config), deterministicSeed: `seed_${input.runId}` },
    runner: runnerIdentity(input.driverKind),
    events: input.events as NativeExecutionBundle["events"],
    semanticTools: semanticTools(input.events),
    terminal,
    observations: {
      eventCount: input.events.length,
      terminalCount: input.events.filter(isTerminal).length,
      processExit: reconciliation?.processExit ?? null,
      reconciliationReason: reconciliation?.reason ?? null,
    },
    usage: usage(input.events, input.durationMs),
    transcript: { ...transcript, complete: true, eventCount: input.events.length, omissionReason: null },
    artifactRoot,
    artifacts,
    failure:
      terminal.runTerminalState === "succeeded"
        ? null
        : { classification: terminal.runTerminalState, code: reconciliation?.reason ?? "unknown", message: `the run ${terminal.runTerminalState}: ${(reconciliation?.reason ?? "unknown").replace(/_/g, " ")}` },
  };
  const path = join(dir, "native-execution.json");
  writeFileSync(path, `${encode(bundle, "native-execution")}\n`);
  return { path, bundle };
}

function runnerIdentity(driverKind: string): NativeExecutionBundle["runner"] {
  const root = packageRoot();
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name: string; version: string };
  return {
    package: { name: pkg.name, version: pkg.version },
    binary: { name: "prp-runnerd", sha256: sha256Digest(readFileSync(join(root, "dist/src/cli/runnerd.js"))) },
    prpVersion: 1,
    nativeExecutionVersion: 1,
    catalogVersion: 1,
    catalogSha256: sha256Digest(readFileSync(join(root, "protocol/manifest.json"))),
    driverContractVersion: 1,
    driverKind,
    driverVersion: pkg.version,
  };
}

/** Problems with the files a bundle references (see contentRefProblems). */
export function bundleFileProblems(bundlePath: string, bundle: NativeExecutionBundle): string[] {
  return contentRefProblems(bundlePath, [
    { at: "/transcript", ref: bundle.transcript },
    { at: "/artifactRoot", ref: bundle.artifactRoot },
    ...bundle.artifacts.map((ref, i) => ({ at: `/artifacts/${i}`, ref })),
  ]);
}
