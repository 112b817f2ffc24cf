import { extname } from "node:path";
import { readFileBounded } from "../contract/bounded-read.js";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import type { PrpEvent } from "../contract/kinds.js";
import { MAX_EVENT_STREAM_BYTES } from "../reducer/event-stream.js";
import { replayEventStream, replayFixture } from "../reducer/index.js";
import type { SessionSnapshot } from "../reducer/snapshot.js";
import type { ApiRefusal, ApiResult, CommandReceipt } from "./api-types.js";
import type { RunSource } from "./run-source.js";

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

  async runIds(): Promise<string[]> {
    return [this.runId];
  }

  async eventsAfter(runId: string, after: number, limit: number): Promise<PrpEvent[] | undefined> {
    return runId === this.runId ? this.events.slice(after, after + limit) : undefined;
  }

  origin() {
    return {
      fixtureName: this.snapshot.fixtureName,
      identity: this.snapshot.identity,
      capabilities: this.snapshot.capabilities,
    };
  }

  async commands(): Promise<CommandReceipt[]> {
    return [];
  }

  async queue(): Promise<ApiResult<CommandReceipt>> {
    return {
      ok: false,
      error: {
        code: "replay_read_only",
        path: "",
        message: "this is a replayed file: there is no runner to send a command to",
      },
    };
  }

  async close(): Promise<void> {}
}
