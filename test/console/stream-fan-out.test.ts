import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ConsoleServer } from "../../src/console/server.js";
import { StoreSource } from "../../src/console/store-source.js";
import { authority, committedRow, connect, event, unwrap, withRun, type Authority } from "../authority/support.js";
import { until } from "../support/until.js";

const STREAMS = 30;
const TOTAL = 4_000;
const BATCH = 100;
const RUN = "run_1";
const TOKEN = "f".repeat(64);

interface Message {
  event: string;
  id: number | undefined;
}

/**
 * What one follower must have been sent: every event once, in order, as `prp` frames with
 * their seq as id, and nothing else: no view (a page fetches the run's view; nothing pushes it).
 * The problems found, none when it was so.
 */
function judgeStream(messages: readonly Message[], total: number): string[] {
  const problems: string[] = [];
  const ids = messages.filter((m) => m.event === "prp").map((m) => m.id);
  if (!(ids.length === total && ids.every((id, i) => id === i + 1)))
    problems.push(`events not 1..${total} once each in order (${ids.length} sent)`);
  const others = messages.filter((m) => m.event !== "prp");
  if (others.length > 0) problems.push(`${others.length} other messages (${others[0]!.event})`);
  return problems;
}

describe("the console's event streams fanned out: 30 pages follow one 4,000-event run", () => {
  let dir: string;
  let a: Authority;
  let connection: string;
  let server: ConsoleServer;
  let base: string;

  const commit = async (from: number, to: number) => {
    const items = [];
    for (let seq = from; seq <= to; seq++)
      items.push({ runId: RUN, connectionId: connection, event: committedRow(event(seq)) });
    for (const result of await a.store.commitEvents(items, Date.now())) unwrap(result);
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-console-fan-out-"));
    a = authority(join(dir, "store"));
    await withRun(a);
    connection = (await connect(a)).connectionId;
    await commit(1, 1);
    server = await ConsoleServer.start({
      source: new StoreSource(a.store, async () => {}),
      host: "127.0.0.1",
      port: 0,
      pollMs: 50,
      token: TOKEN,
      onError: (err) => assert.fail(err),
    });
    base = new URL(server.url).origin;
  });
  after(async () => {
    await server?.close();
    await a?.store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Follows the run's events with the token (as the page does) and records each message, until aborted. */
  const open = async (abort: AbortController) => {
    const messages: Message[] = [];
    let bytes = 0;
    const res = await fetch(`${base}/v1/runs/${RUN}/events?after=0`, {
      signal: abort.signal,
      headers: { authorization: `Bearer ${TOKEN}`, accept: "text/event-stream" },
    });
    assert.equal(res.status, 200);
    const reading = (async () => {
      let text = "";
      for await (const chunk of res.body! as AsyncIterable<Uint8Array>) {
        bytes += chunk.byteLength;
        text += Buffer.from(chunk).toString("utf8");
        for (let end = text.indexOf("\n\n"); end >= 0; end = text.indexOf("\n\n")) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          const kind = /^event: (.+)$/m.exec(block)?.[1];
          const id = /^id: (\d+)$/m.exec(block)?.[1];
          if (kind) messages.push({ event: kind, id: id === undefined ? undefined : Number(id) });
        }
      }
    })().catch(() => {});
    return { messages, reading, bytes: () => bytes };
  };

  it("each page's stream gets every event once, in order, and nothing else; every page the same bytes", async (t) => {
    const abort = new AbortController();
    const streams = await Promise.all(Array.from({ length: STREAMS }, () => open(abort)));
    await until(() => streams.every((s) => s.messages.length > 0), "every stream's first event");
    // The run grows to 4,000 events in batches, as fast as this machine commits them.
    for (let next = 2; next <= TOTAL; next += BATCH) {
      await commit(next, Math.min(TOTAL, next + BATCH - 1));
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const s of streams)
      await until(
        () => s.messages.filter((m) => m.event === "prp").length >= TOTAL,
        `event ${TOTAL} on every stream`,
        60_000,
      );
    abort.abort();
    await Promise.all(streams.map((s) => s.reading));
    t.diagnostic(`each stream: ${streams[0]!.bytes()} bytes for ${TOTAL} events`);
    for (const [i, s] of streams.entries()) assert.deepEqual(judgeStream(s.messages, TOTAL), [], `stream ${i + 1}`);
    assert.equal(new Set(streams.map((s) => s.bytes())).size, 1, "every follower was sent the same bytes");
  });

  it("must-fail twin: the judge refuses a stream with an event twice, one missing, or a view pushed", () => {
    const prp = (id: number): Message => ({ event: "prp", id });
    const all = Array.from({ length: TOTAL }, (_, i) => prp(i + 1));
    assert.deepEqual(judgeStream(all, TOTAL), []);
    assert.match(judgeStream([prp(1), ...all], TOTAL)[0]!, /once each in order/);
    assert.match(judgeStream(all.slice(1), TOTAL)[0]!, /once each in order/);
    assert.deepEqual(judgeStream([...all, { event: "view", id: undefined }], TOTAL), ["1 other messages (view)"]);
  });
});
