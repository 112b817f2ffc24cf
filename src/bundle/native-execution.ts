import { createHash } from "node:crypto";
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { decodeValue } from "../contract/decode.js";
import { canonicalDigest, sha256Digest } from "../contract/digest.js";
import { encode } from "../contract/encode.js";
import { ContractViolation } from "../contract/errors.js";
import type * as T from "../contract/generated/types.js";
import type { PrpEvent } from "../contract/kinds.js";
import { packageCodeDigest } from "../contract/package-info.js";
import { packageRoot } from "../contract/package-root.js";
import { contentRefOf, contentRefProblems, type ContentRef } from "./content-ref.js";

export type NativeExecutionBundle = T.PaperclipRunnerNativeExecutionBundle;
export const BUNDLE_FILE = "native-execution.json";
const TRANSCRIPT_FILE = "transcript.ndjson";

/** What a bundle says about its run besides its events: known when the run starts. */
export interface BundleHeader {
  runId: string;
  /** The case: the script's name. */
  caseId: string;
  attemptId: string;
  scriptBytes: Uint8Array;
  /** Everything that shaped the run besides the script (flags, limits); its digest is the config id. */
  config: Record<string, unknown>;
  driverKind: string;
}

export interface BundleInput extends BundleHeader {
  events: PrpEvent[];
  durationMs: number;
}

/** The members of a bundle that name its files. */
export type BundleFiles = Pick<NativeExecutionBundle, "transcript" | "artifactRoot" | "artifacts">;

const isTerminal = (e: PrpEvent) => e.eventType === "run.terminal";
const payloadOf = (e: PrpEvent) => e.payload as Record<string, unknown>;

/**
 * Why an event keeps its run from having a bundle, or null: a bundle carries v1 events only
 * (wire.md O10), so a run that reported an event of a later version (a session goal) has none
 * until a format for v2/v3 streams is decided.
 */
const versionRefusal = (e: PrpEvent): string | null =>
  e.schemaVersion === 1
    ? null
    : `none: ${e.eventType} is a v${e.schemaVersion} event, and a native execution bundle carries v1 events only`;

/** Why a run gets no bundle, or null (see versionRefusal). */
export function bundleRefusal(events: readonly PrpEvent[]): string | null {
  const later = events.find((e) => versionRefusal(e) !== null);
  return later ? versionRefusal(later) : null;
}

/** The run's terminal payload, from its run.terminal event. */
export const terminalOf = (events: readonly PrpEvent[]): T.PRPRunTerminal | undefined =>
  events.find(isTerminal)?.payload as unknown as T.PRPRunTerminal | undefined;

/** A file written as it grows, its digest and size kept on the way; `<path>.partial` until it is done. */
class Spool {
  private readonly fd: number;
  private readonly hash = createHash("sha256");
  private open = true;
  bytes = 0;
  members = 0;

  constructor(readonly path: string) {
    this.fd = openSync(`${path}.partial`, "w", 0o644);
  }

  append(text: string | Buffer): void {
    const bytes = typeof text === "string" ? Buffer.from(text) : text;
    writeSync(this.fd, bytes);
    this.hash.update(bytes);
    this.bytes += bytes.byteLength;
  }

  /** One member of a JSON array being written: a comma before all but the first. */
  member(json: string): void {
    this.append(this.members++ === 0 ? json : `,${json}`);
  }

  /** Appends another spool's bytes, a chunk at a time, and removes it. */
  absorb(other: Spool): void {
    other.close();
    const from = openSync(`${other.path}.partial`, "r");
    const chunk = Buffer.alloc(1 << 16);
    try {
      for (let n = readSync(from, chunk); n > 0; n = readSync(from, chunk)) this.append(chunk.subarray(0, n));
    } finally {
      closeSync(from);
      other.discard();
    }
  }

  /** Closed and renamed to its own name; returns its digest. */
  done(): string {
    this.close();
    renameSync(`${this.path}.partial`, this.path);
    return `sha256:${this.hash.digest("hex")}`;
  }

  discard(): void {
    this.close();
    rmSync(`${this.path}.partial`, { force: true });
  }

  private close(): void {
    if (this.open) closeSync(this.fd);
    this.open = false;
  }
}

/**
 * Writes `<dir>/native-execution.json` (`paperclip-runner/native-execution/v1`, seed 000) with
 * the transcript and artifacts beside it as content references, one event at a time as the run
 * reports them: every event goes to the transcript and the bundle's `events` as it is added,
 * and what the bundle sums up (counts, semantic tool receipts, usage, the result, the harness
 * log) is kept on the way, so a run of any length costs the writer the same memory. Until
 * `finish`, the files are `<name>.partial`; a bundle is never half there under its own name.
 *
 * The bytes are those of `JSON.stringify` of the whole bundle (its members in schema order), and
 * the bundle is checked against the contract before it is named: each event as it comes, the
 * rest with the terminal event standing for the events.
 */
export class BundleWriter {
  private readonly transcript: Spool;
  private readonly body: Spool;
  /** The semantic tool receipts, kept aside until the bundle's `semanticTools` follows its events. */
  private readonly receipts: { calls: Spool; results: Spool; denials: Spool };
  private terminalEvent: PrpEvent | null = null;
  private terminalCount = 0;
  private result: PrpEvent | null = null;
  private exited: PrpEvent | null = null;
  /** The last cumulative usage per provider (usage.reported is cumulative). */
  private readonly usage = new Map<string, Record<string, number>>();
  private refused: string | null = null;
  /** The bundle's members before its events. */
  private readonly head: Pick<NativeExecutionBundle, "schema" | "provenance" | "identity" | "input" | "runner">;

  constructor(
    private readonly dir: string,
    private readonly header: BundleHeader,
  ) {
    mkdirSync(join(dir, "artifacts"), { recursive: true });
    this.transcript = new Spool(join(dir, TRANSCRIPT_FILE));
    this.body = new Spool(join(dir, BUNDLE_FILE));
    this.receipts = {
      calls: new Spool(join(dir, "semantic-calls")),
      results: new Spool(join(dir, "semantic-results")),
      denials: new Spool(join(dir, "semantic-denials")),
    };
    this.head = {
      schema: "paperclip-runner/native-execution/v1",
      provenance: "live",
      identity: {
        runId: header.runId,
        caseId: header.caseId,
        configId: canonicalDigest(header.config),
        attemptId: header.attemptId,
      },
      input: {
        caseSha256: sha256Digest(header.scriptBytes),
        configSha256: canonicalDigest(header.config),
        deterministicSeed: `seed_${header.runId}`,
      },
      runner: runnerIdentity(header.driverKind),
    };
    this.body.append(`${JSON.stringify(this.head).slice(0, -1)},"events":[`);
  }

  /** Why this run gets no bundle (see versionRefusal), once an event has said so; then nothing is written. */
  get refusal(): string | null {
    return this.refused;
  }

  /** The next event of the run. Throws ContractViolation for an event the contract refuses. */
  add(event: PrpEvent): void {
    if (this.refused) return;
    this.refused = versionRefusal(event);
    if (this.refused) return this.discard();
    const checked = decodeValue(event, { kind: "event" });
    if (!checked.ok)
      throw new ContractViolation({ ...checked.error, path: `/events/${this.body.members}${checked.error.path}` });
    const json = JSON.stringify(event);
    this.transcript.append(`${json}\n`);
    this.body.member(json);
    if (isTerminal(event)) {
      this.terminalEvent ??= event;
      this.terminalCount += 1;
    }
    if (event.eventType === "run.result.proposed") this.result ??= event;
    if (event.eventType === "harness.exited") this.exited ??= event;
    const p = payloadOf(event);
    if (event.eventType === "usage.reported" && p.cumulative && typeof p.cumulative === "object")
      this.usage.set(String(p.provider), p.cumulative as Record<string, number>);
    const receipt = p.semantic_tool;
    if (receipt !== null && typeof receipt === "object") {
      const r = receipt as Record<string, unknown>;
      const text = JSON.stringify(r);
      if (r.phase === "input") this.receipts.calls.member(text);
      else {
        this.receipts.results.member(text);
        if (r.outcome === "denied") this.receipts.denials.member(text);
      }
    }
  }

  /** Completes the bundle and names its files; returns its path and file references. The run must have had its terminal. */
  finish(durationMs: number): { path: string; files: BundleFiles } {
    if (this.refused) throw new Error(`finish after the bundle was refused: ${this.refused}`);
    const terminalEvent = this.terminalEvent;
    if (!terminalEvent) throw new Error("a run without run.terminal has no bundle");
    const dir = this.dir;
    const put = (uri: string, bytes: Uint8Array, mediaType: string): ContentRef => {
      writeFileSync(join(dir, uri), bytes);
      return contentRefOf(uri, bytes, mediaType);
    };
    const events = this.body.members;
    const transcript: ContentRef = {
      uri: TRANSCRIPT_FILE,
      sha256: this.transcript.done(),
      byteSize: this.transcript.bytes,
      mediaType: "application/x-ndjson",
    };
    const terminal = terminalEvent.payload as unknown as T.PRPRunTerminal;
    const artifacts = [
      put("artifacts/script.json", this.header.scriptBytes, "application/json"),
      ...(this.result
        ? [
            put(
              "artifacts/result.json",
              Buffer.from(`${JSON.stringify(this.result.payload, null, 2)}\n`),
              "application/json",
            ),
          ]
        : []),
      ...(this.exited
        ? [
            put(
              "artifacts/harness-log.txt",
              Buffer.from(
                ((payloadOf(this.exited).log as { lines?: string[] })?.lines ?? []).map((l) => `${l}\n`).join(""),
              ),
              "text/plain; charset=utf-8",
            ),
          ]
        : []),
    ];
    const artifactRoot = put(
      "artifacts.json",
      Buffer.from(`${JSON.stringify(artifacts, null, 2)}\n`),
      "application/json",
    );
    const reconciliation = terminal.reconciliation;
    const rest = {
      terminal,
      observations: {
        eventCount: events,
        terminalCount: this.terminalCount,
        processExit: reconciliation?.processExit ?? null,
        reconciliationReason: reconciliation?.reason ?? null,
      },
      usage: this.usageTotals(durationMs),
      transcript: { ...transcript, complete: true, eventCount: events, omissionReason: null },
      artifactRoot,
      artifacts,
      failure:
        terminal.runTerminalState === "succeeded"
          ? null
          : {
              classification: terminal.runTerminalState,
              code: reconciliation?.reason ?? "unknown",
              message: `the run ${terminal.runTerminalState}: ${(reconciliation?.reason ?? "unknown").replace(/_/g, " ")}`,
            },
    };
    // Everything but the events (each checked as it came) is checked here, the terminal event standing for them;
    // the receipts are objects taken from checked events, which is all the schema asks of them.
    encode(
      {
        ...this.head,
        events: [terminalEvent],
        semanticTools: { definitions: [], calls: [], results: [], denials: [] },
        ...rest,
      } as NativeExecutionBundle,
      "native-execution",
    );
    const { calls, results, denials } = this.receipts;
    this.body.append(`],"semanticTools":{"definitions":[],"calls":[`);
    this.body.absorb(calls);
    this.body.append(`],"results":[`);
    this.body.absorb(results);
    this.body.append(`],"denials":[`);
    this.body.absorb(denials);
    this.body.append(`]},${JSON.stringify(rest).slice(1)}\n`);
    this.body.done();
    return { path: this.body.path, files: { transcript: rest.transcript, artifactRoot, artifacts } };
  }

  /** Removes what was written: the run gets no bundle. */
  discard(): void {
    for (const spool of [this.transcript, this.body, this.receipts.calls, this.receipts.results, this.receipts.denials])
      spool.discard();
  }

  private usageTotals(durationMs: number): NativeExecutionBundle["usage"] {
    const sum = (key: string) =>
      [...this.usage.values()].reduce((n, m) => n + (Number.isSafeInteger(m[key]) ? m[key]! : 0), 0);
    const inputTokens = sum("inputTokens");
    const outputTokens = sum("outputTokens");
    return {
      inputTokens,
      outputTokens,
      totalTokens: inputTokens + outputTokens,
      requestCount: sum("requests"),
      durationMs: Math.max(0, Math.round(durationMs)),
      cost: null,
    };
  }
}

/** Writes the bundle of a run whose events are all at hand (see BundleWriter). */
export function writeNativeExecutionBundle(dir: string, input: BundleInput): { path: string; files: BundleFiles } {
  const writer = new BundleWriter(dir, input);
  for (const event of input.events) writer.add(event);
  return writer.finish(input.durationMs);
}

function runnerIdentity(driverKind: string): NativeExecutionBundle["runner"] {
  const root = packageRoot();
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name: string; version: string };
  return {
    package: { name: pkg.name, version: pkg.version },
    binary: { name: "prp-runnerd", sha256: packageCodeDigest() },
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
export function bundleFileProblems(bundlePath: string, bundle: BundleFiles): string[] {
  return contentRefProblems(bundlePath, [
    { at: "/transcript", ref: bundle.transcript },
    { at: "/artifactRoot", ref: bundle.artifactRoot },
    ...bundle.artifacts.map((ref, i) => ({ at: `/artifacts/${i}`, ref })),
  ]);
}
