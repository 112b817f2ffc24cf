import { extname } from "node:path";
import { readFileBounded } from "../contract/bounded-read.js";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import type { PrpEvent } from "../contract/kinds.js";
import { MAX_EVENT_STREAM_BYTES } from "../reducer/event-stream.js";
import { replayEventStream, replayFixture } from "../reducer/index.js";
import type { SessionSnapshot } from "../reducer/snapshot.js";
import type { ApiStore } from "../api/context.js";
import type { LoggedEvent, RunListPage, RunSnapshot } from "../authority/store.js";
import type { RunSource } from "./run-source.js";

interface ApiRefusal {
  code: string;
  path: string;
  message: string;
}

/** Files read as an NDJSON event stream; any other file is read as a replay fixture. */
const STREAM_EXTENSIONS = new Set([".ndjson", ".jsonl"]);

/**
 * One replayed file as a run (`prp console FILE`): a replay fixture, or an NDJSON transcript
 * (`prp events --json`, a bundle's transcript.ndjson), read and checked as `prp replay` does.
 */
export class ReplaySource implements RunSource {
  readonly live = false;

  private constructor(
    private readonly runId: string,
    private readonly events: PrpEvent[],
    private readonly snapshot: SessionSnapshot,
  ) {}

  static open(path: string): { ok: true; value: ReplaySource } | { ok: false; error: ApiRefusal } {
    const stream = STREAM_EXTENSIONS.has(extname(path).toLowerCase());
    const read = readFileBounded(
      path,
      stream ? { maxBytes: MAX_EVENT_STREAM_BYTES, maxLineBytes: MAX_FRAME_BYTES } : { maxBytes: MAX_FRAME_BYTES },
    );
    if (!read.ok) return { ok: false, error: read.error };
    const replayed = stream ? replayEventStream(read.bytes) : replayFixture(read.bytes);
    if (!replayed.ok) {
      const line = "line" in replayed.error ? `line ${replayed.error.line}: ` : "";
      return {
        ok: false,
        error: {
          code: replayed.error.code,
          path: replayed.error.path,
          message: `${path}: ${line}${replayed.error.message}`,
        },
      };
    }
    const runId = replayed.snapshot.identity?.runId ?? replayed.events[0]?.runId ?? "replay";
    return { ok: true, value: new ReplaySource(runId, replayed.events, replayed.snapshot) };
  }

  readonly writes = {
    refused: {
      code: "replay_read_only",
      message: "this is a replayed file: there is no runner to send a command to",
    },
  };

  /**
   * The replayed run as the API reads a store: one run whose events are the file's, in its
   * order (an event's seq is its position in the file), that takes no command.
   */
  readonly store: ApiStore = {
    run: async (runId) => (runId === this.runId ? this.snapshotOfRun() : undefined),
    runCursor: async (runId) => (runId === this.runId ? this.snapshotOfRun() : undefined),
    runSpec: async () => undefined,
    // A replayed run was never queued.
    dispatch: async () => [],
    listRuns: async (query): Promise<RunListPage> => {
      const run = this.snapshotOfRun();
      const state = run.terminalSourceSeq !== null ? "ended" : run.ackedSourceSeq > 0 ? "running" : "pending";
      const shown =
        query.after === undefined &&
        (query.state === undefined || query.state === state) &&
        (query.text === undefined || this.runId.toLowerCase().includes(query.text.toLowerCase())) &&
        Object.keys(query.labels ?? {}).length === 0;
      const entry = {
        runId: this.runId,
        state,
        protocolVersion: run.protocolVersion,
        ackedSourceSeq: run.ackedSourceSeq,
        createdAtUnixMs: run.createdAtUnixMs,
        spec: null,
        dispatch: null,
      } as const;
      return { runs: shown ? [entry] : [], next: null };
    },
    eventLog: async (runId, after, limit): Promise<LoggedEvent[]> =>
      runId !== this.runId
        ? []
        : this.events.slice(after, after + limit).map((e, i) => ({
            sourceSeq: after + i + 1,
            sourceEventId: e.sourceEventId,
            eventType: e.eventType,
            priority: e.priority,
            envelope: JSON.stringify(e),
            committedAtUnixMs: 0,
          })),
    command: async () => undefined,
    commands: async () => [],
    apiToken: async () => undefined,
  };

  private snapshotOfRun(): RunSnapshot {
    const first = (this.events[0] ?? {}) as unknown as Record<string, unknown>;
    const field = (name: string): string => {
      const value = this.snapshot.identity?.[name] ?? first[name];
      return typeof value === "string" && value !== "" ? value : "replay";
    };
    const terminal = this.events.findIndex((e) => e.eventType === "run.terminal");
    const startedAt = Date.parse(this.events[0]?.emittedAt ?? "");
    return {
      identity: {
        runnerInstanceId: field("runnerInstanceId"),
        environmentLeaseId: field("environmentLeaseId"),
        runId: this.runId,
        normalizedSessionId: field("normalizedSessionId"),
        turnId: field("turnId"),
        itemId: field("itemId"),
      },
      protocolVersion: /v(\d+)$/.test(String(first.schema)) ? Number(/v(\d+)$/.exec(String(first.schema))![1]) : 1,
      ackedSourceSeq: this.events.length,
      terminalSourceSeq: terminal < 0 ? null : terminal + 1,
      connectionCount: 0,
      currentConnectionId: null,
      revocationEpoch: 0,
      replayDeliveries: 0,
      duplicateCommandResults: 0,
      freshBootstraps: 0,
      malformedFrames: 0,
      lastLeaseId: null,
      lastLeaseExpiresAtUnixMs: null,
      commandCount: 0,
      commandDeliveryCounts: {},
      createdAtUnixMs: Number.isFinite(startedAt) ? startedAt : 0,
    };
  }

  origin() {
    return {
      fixtureName: this.snapshot.fixtureName,
      identity: this.snapshot.identity,
      capabilities: this.snapshot.capabilities,
    };
  }

  async close(): Promise<void> {}
}
