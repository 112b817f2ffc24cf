import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, it } from "node:test";
import { EventFeed } from "../../src/api/event-feed.js";
import type { LoggedEvent, RunCursor } from "../../src/authority/store.js";
import { until } from "../support/until.js";
import { judgeStream, parseSse } from "./support.js";

/** A run log in memory, counting the reads the feed makes of it. */
function memoryLog() {
  const rows: LoggedEvent[] = [];
  let reads = 0;
  let terminal: number | null = null;
  return {
    rows,
    reads: () => reads,
    commit(eventType = "item.delta") {
      const seq = rows.length + 1;
      rows.push({
        sourceSeq: seq,
        sourceEventId: `event_${seq}`,
        eventType,
        priority: 2,
        envelope: JSON.stringify({ sourceSeq: seq, eventType, payload: { text: `d${seq}` } }),
        committedAtUnixMs: 0,
      });
      if (eventType === "run.terminal") terminal = seq;
    },
    store: {
      eventLog: async (_runId: string, after: number, limit: number) => {
        reads++;
        return rows.filter((r) => r.sourceSeq > after).slice(0, limit);
      },
      runCursor: async () => ({ ackedSourceSeq: rows.length, terminalSourceSeq: terminal }) as unknown as RunCursor,
    },
  };
}

/**
 * A response that keeps what its client received. `delivers`: a socket whose reader stopped after
 * that many bytes (perhaps mid-frame); the rest stays unsent, in `writableLength`.
 */
class Sink extends EventEmitter {
  chunks: Buffer[] = [];
  writableLength = 0;
  destroyed = false;
  ended = false;
  private sent = 0;
  constructor(private readonly delivers = Infinity) {
    super();
  }
  write(chunk: Buffer): boolean {
    const room = Math.max(0, Math.min(chunk.length, this.delivers - this.sent));
    if (room > 0) this.chunks.push(room === chunk.length ? chunk : chunk.subarray(0, room));
    this.sent += room;
    this.writableLength += chunk.length - room;
    return true;
  }
  end(chunk?: Buffer): void {
    if (chunk) this.chunks.push(chunk);
    this.ended = true;
    this.emit("close");
  }
  destroy(): void {
    this.destroyed = true;
    this.emit("close");
  }
  text(): string {
    return Buffer.concat(this.chunks).toString();
  }
  /** Whole events only: a client discards a frame cut in half. */
  events() {
    const text = this.text();
    return parseSse(text.slice(0, text.lastIndexOf("\n\n") + 2))
      .filter((e) => e.event === "prp")
      .map((e) => ({ seq: Number(e.id), data: e.data }));
  }
}

const feedOver = (log: ReturnType<typeof memoryLog>, maxBufferedBytes = 1 << 20, keepAliveMs = 60_000) =>
  new EventFeed({ store: log.store, pollMs: 5, maxBufferedBytes, keepAliveMs, onError: (e) => assert.fail(e) });

describe("the live event feed", () => {
  it("reads each commit once and writes the same bytes to every follower", async () => {
    const log = memoryLog();
    const feed = feedOver(log);
    try {
      const sinks = Array.from({ length: 50 }, () => new Sink());
      await Promise.all(sinks.map((s) => feed.follow("run_1", 0, s as unknown as ServerResponse)));
      const readsBefore = log.reads();
      for (let i = 0; i < 100; i++) log.commit();
      feed.wake("run_1");
      await until(
        () => sinks.every((s) => s.events().length === 100),
        () => "every follower to get 100 events",
        5000,
      );
      assert.ok(
        log.reads() - readsBefore <= 5,
        `the store was read ${log.reads() - readsBefore} times for 50 followers`,
      );
      for (let i = 0; i < sinks[0]!.chunks.length; i++)
        assert.ok(
          sinks.every((s) => s.chunks[i] === sinks[0]!.chunks[i]),
          "one buffer, encoded once, written to all",
        );
      log.commit("run.terminal");
      await until(
        () => sinks.every((s) => s.ended),
        () => "every stream to end after run.terminal",
        5000,
      );
      for (const s of sinks) assert.equal(judgeStream(s.events(), log.rows), null);
      assert.ok(sinks.every((s) => s.text().endsWith("event: end\ndata: {}\n\n")));
      assert.equal(feed.followerCount(), 0);
    } finally {
      feed.close();
    }
  });

  it("reads a group commit once, though each of its events wakes the run", async () => {
    const log = memoryLog();
    // No poll within the test: every read is a wake's.
    const feed = new EventFeed({
      store: log.store,
      pollMs: 60_000,
      maxBufferedBytes: 1 << 20,
      keepAliveMs: 60_000,
      onError: (e) => assert.fail(e),
    });
    try {
      const sink = new Sink();
      await feed.follow("run_1", 0, sink as unknown as ServerResponse);
      await until(
        () => log.reads() > 0,
        () => "the join's first read",
        5000,
      );
      const readsBefore = log.reads();
      // As `prp authority serve --api` wakes it: one callback per committed event, after the commit.
      for (let i = 0; i < 100; i++) log.commit();
      for (let i = 0; i < 100; i++) setImmediate(() => feed.wake("run_1"));
      await until(
        () => sink.events().length === 100,
        () => "the follower to get 100 events",
        5000,
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(log.reads() - readsBefore <= 2, `the store was read ${log.reads() - readsBefore} times for one commit`);
      assert.equal(judgeStream(sink.events(), log.rows), null);
    } finally {
      feed.close();
    }
  });

  it("closes a follower whose socket backs up, and the others go on; it resumes with nothing lost", async () => {
    const log = memoryLog();
    const feed = feedOver(log, 4096);
    try {
      const slow = new Sink(1000);
      const steady = new Sink();
      await feed.follow("run_1", 0, slow as unknown as ServerResponse);
      await feed.follow("run_1", 0, steady as unknown as ServerResponse);
      for (let i = 0; i < 200; i++) log.commit();
      await until(
        () => steady.events().length === 200,
        () => "the steady follower to get 200 events",
        5000,
      );
      assert.equal(slow.destroyed, true, "the backed-up follower was cut off");
      const got = slow.events();
      assert.ok(got.length < 200);
      const resumed = new Sink();
      await feed.follow("run_1", got.at(-1)?.seq ?? 0, resumed as unknown as ServerResponse);
      log.commit("run.terminal");
      await until(
        () => resumed.ended && steady.ended,
        () => "both streams to end",
        5000,
      );
      assert.equal(judgeStream([...got, ...resumed.events()], log.rows), null);
      assert.equal(judgeStream(steady.events(), log.rows), null);
    } finally {
      feed.close();
    }
  });

  it("joins a follower that caught up past the reader without a duplicate", async () => {
    const log = memoryLog();
    const feed = feedOver(log);
    try {
      const early = new Sink();
      await feed.follow("run_1", 0, early as unknown as ServerResponse);
      for (let i = 0; i < 30; i++) log.commit();
      // Before the reader wakes: this one reads 1–30 on its own and joins ahead of it.
      const late = new Sink();
      await feed.follow("run_1", 0, late as unknown as ServerResponse);
      for (let i = 0; i < 5; i++) log.commit();
      log.commit("run.terminal");
      await until(
        () => early.ended && late.ended,
        () => "both streams to end",
        5000,
      );
      assert.equal(judgeStream(early.events(), log.rows), null);
      assert.equal(judgeStream(late.events(), log.rows), null);
    } finally {
      feed.close();
    }
  });

  it("sends an idle follower keep-alive comments", async () => {
    const log = memoryLog();
    const feed = feedOver(log, 1 << 20, 20);
    try {
      const idle = new Sink();
      await feed.follow("run_1", 0, idle as unknown as ServerResponse);
      await until(
        () => idle.text().startsWith(":\n\n:\n\n"),
        () => "two keep-alive comments",
        5000,
      );
      assert.deepEqual(idle.events(), [], "comments only, no event");
    } finally {
      feed.close();
    }
  });
});
