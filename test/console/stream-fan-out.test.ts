import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { PrpEvent } from "../../src/contract/kinds.js";
import type { RunView } from "../../src/console/api-types.js";
import type { RunSource } from "../../src/console/run-source.js";
import { ConsoleServer } from "../../src/console/server.js";
import { event } from "../authority/support.js";
import { until } from "../support/until.js";

const STREAMS = 30;
const TOTAL = 4_000;
const BATCH = 100;
/** src/console/api.ts: a page gets the run's view at most this often. */
const VIEW_EVERY_MS = 250;
const TOKEN = "f".repeat(64);

/** A run whose events the test appends: what a store shows a console between two polls. */
class GrowingSource implements RunSource {
  readonly live = true;
  readonly events: PrpEvent[] = [event(1) as unknown as PrpEvent];
  async runIds() {
    return ["run_1"];
  }
  async eventsAfter(_runId: string, after: number, limit: number) {
    return this.events.slice(after, after + limit);
  }
  origin() {
    return {};
  }
  async commands() {
    return [];
  }
  async queue(): Promise<never> {
    throw new Error("the test sends no command");
  }
  async close() {}
}

interface Message {
  event: string;
  data: unknown;
  bytes: number;
}

interface StreamRecord {
  openedAt: number;
  closedAt: number;
  messages: Message[];
}

/**
 * What one stream must have been sent: every event once, in order; the view only when it
 * changed, and at most once per VIEW_EVERY_MS of the stream's life (plus the first, and the one
 * waiting when the events began). The problems found, none when it was so.
 */
function judgeStream(s: StreamRecord, total: number): string[] {
  const problems: string[] = [];
  const positions = s.messages.filter((m) => m.event === "prp").map((m) => (m.data as { position: number }).position);
  const inOrder = positions.length === total && positions.every((p, i) => p === i + 1);
  if (!inOrder) problems.push(`events not 1..${total} once each in order (${positions.length} sent)`);
  const views = s.messages.filter((m) => m.event === "view").map((m) => (m.data as RunView).position);
  for (let i = 1; i < views.length; i++)
    if (views[i]! <= views[i - 1]!) problems.push(`view ${i} (position ${views[i]}) was sent unchanged`);
  const bound = Math.floor((s.closedAt - s.openedAt) / VIEW_EVERY_MS) + 2;
  if (views.length > bound) problems.push(`${views.length} views in ${s.closedAt - s.openedAt} ms (bound ${bound})`);
  if (views.at(-1) !== total) problems.push(`the last view is at ${views.at(-1)}, not ${total}`);
  return problems;
}

describe("the console's run streams fanned out: 30 pages on one 4,000-event run", () => {
  const source = new GrowingSource();
  let server: ConsoleServer;
  let base: string;
  before(async () => {
    server = await ConsoleServer.start({
      source,
      host: "127.0.0.1",
      port: 0,
      pollMs: 50,
      token: TOKEN,
      onError: (err) => assert.fail(err),
    });
    base = new URL(server.url).origin;
  });
  after(() => server?.close());

  /** Opens a stream with the token and records each message with its bytes, until aborted. */
  const open = async (abort: AbortController) => {
    const record: StreamRecord = { openedAt: Date.now(), closedAt: 0, messages: [] };
    const res = await fetch(`${base}/api/runs/run_1/stream?after=0`, {
      signal: abort.signal,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(res.status, 200);
    const reading = (async () => {
      let text = "";
      for await (const chunk of res.body! as AsyncIterable<Uint8Array>) {
        text += Buffer.from(chunk).toString("utf8");
        for (let end = text.indexOf("\n\n"); end >= 0; end = text.indexOf("\n\n")) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          const kind = /^event: (.+)$/m.exec(block)?.[1];
          const data = /^data: (.+)$/m.exec(block)?.[1];
          if (kind && data)
            record.messages.push({ event: kind, data: JSON.parse(data), bytes: Buffer.byteLength(block) + 2 });
        }
      }
    })().catch(() => {});
    return { record, reading };
  };

  it("each stream gets every event once in order, and the view only when changed, at most every 250 ms", async (t) => {
    const abort = new AbortController();
    const streams = await Promise.all(Array.from({ length: STREAMS }, () => open(abort)));
    await until(
      () => streams.every((s) => s.record.messages.some((m) => m.event === "view")),
      "every stream's first view",
    );
    // The run grows to 4,000 events in batches, as fast as this machine commits them.
    while (source.events.length < TOTAL) {
      for (let i = 0; i < BATCH && source.events.length < TOTAL; i++)
        source.events.push(event(source.events.length + 1) as unknown as PrpEvent);
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const s of streams)
      await until(
        () => s.record.messages.some((m) => m.event === "view" && (m.data as RunView).position === TOTAL),
        `a view at position ${TOTAL} on every stream`,
      );
    const closedAt = Date.now();
    abort.abort();
    await Promise.all(streams.map((s) => s.reading));

    for (const [i, { record }] of streams.entries()) {
      record.closedAt = closedAt;
      const views = record.messages.filter((m) => m.event === "view");
      const viewBytes = views.reduce((n, m) => n + m.bytes, 0);
      const eventBytes = record.messages.filter((m) => m.event === "prp").reduce((n, m) => n + m.bytes, 0);
      if (i === 0 || i === STREAMS - 1)
        t.diagnostic(
          `stream ${i + 1}: ${views.length} views (${viewBytes} bytes) and ${TOTAL} events (${eventBytes} bytes) in ${closedAt - record.openedAt} ms`,
        );
      assert.deepEqual(judgeStream(record, TOTAL), [], `stream ${i + 1}`);
      // Coalesced views cost no more than a view per VIEW_EVERY_MS of the largest view.
      const largest = Math.max(...views.map((m) => m.bytes));
      const bound = Math.floor((closedAt - record.openedAt) / VIEW_EVERY_MS) + 2;
      assert.ok(
        viewBytes <= bound * largest,
        `stream ${i + 1}: ${viewBytes} bytes of views (bound ${bound} × ${largest})`,
      );
    }
  });

  it("must-fail twin: the judge refuses a stream sent a view per batch, a repeated view, or an event twice", () => {
    const prp = (position: number): Message => ({ event: "prp", data: { position }, bytes: 0 });
    const view = (position: number): Message => ({ event: "view", data: { position }, bytes: 0 });
    const batches = Array.from({ length: 40 }, (_, b) => [
      ...Array.from({ length: 100 }, (_, i) => prp(b * 100 + i + 1)),
      view((b + 1) * 100),
    ]).flat();
    const oneSecond = { openedAt: 0, closedAt: 1000 };
    assert.deepEqual(judgeStream({ ...oneSecond, messages: batches }, TOTAL), ["40 views in 1000 ms (bound 6)"]);
    const coalesced = batches.filter((m) => m.event === "prp" || (m.data as RunView).position % 1000 === 0);
    assert.deepEqual(judgeStream({ openedAt: 0, closedAt: 1000, messages: coalesced }, TOTAL), []);
    assert.deepEqual(judgeStream({ ...oneSecond, messages: [...coalesced, view(TOTAL)] }, TOTAL), [
      "view 4 (position 4000) was sent unchanged",
    ]);
    assert.match(judgeStream({ ...oneSecond, messages: [prp(1), ...coalesced] }, TOTAL)[0]!, /once each in order/);
  });
});
