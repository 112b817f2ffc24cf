import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import type { PrpEvent } from "../../src/contract/kinds.js";
import type { RunView } from "../../src/console/api-types.js";
import { handleApi } from "../../src/console/api.js";
import { LiveHub } from "../../src/console/live-hub.js";
import { RunBook } from "../../src/console/run-book.js";
import type { RunSource } from "../../src/console/run-source.js";
import { event } from "../authority/support.js";
import { until } from "../support/until.js";

/** A run whose events the test appends: what a store shows a console between two polls. */
class GrowingSource implements RunSource {
  readonly live = true;
  readonly events: PrpEvent[] = [];
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

describe("the console's run stream: every event as it comes, the view coalesced", () => {
  const source = new GrowingSource();
  const book = new RunBook(source, undefined);
  // Not started: the test refreshes the hub itself, one batch at a time.
  const hub = new LiveHub(book, 1_000_000, (err) => assert.fail(err));
  let server: Server;
  let base: string;
  before(async () => {
    server = createServer(
      (req, res) =>
        void handleApi(
          { book, hub, bundles: undefined, onError: (err) => assert.fail(err) },
          req,
          res,
          new URL(req.url!, "http://console.invalid"),
        ),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("sends each of 40 batches' events once, in order, but the view far fewer times, and the last view is current", async () => {
    const abort = new AbortController();
    const res = await fetch(`${base}/api/runs/run_1/stream?after=0`, { signal: abort.signal });
    const messages: Array<{ event: string; data: unknown }> = [];
    const reading = (async () => {
      let text = "";
      for await (const chunk of res.body! as AsyncIterable<Uint8Array>) {
        text += Buffer.from(chunk).toString("utf8");
        for (let end = text.indexOf("\n\n"); end >= 0; end = text.indexOf("\n\n")) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          const kind = /^event: (.+)$/m.exec(block)?.[1];
          const data = /^data: (.+)$/m.exec(block)?.[1];
          if (kind && data) messages.push({ event: kind, data: JSON.parse(data) });
        }
      }
    })().catch(() => {});
    await until(() => messages.some((m) => m.event === "view"), "the first view");

    const batches = 40;
    const started = Date.now();
    for (let b = 0; b < batches; b++) {
      for (let i = 0; i < 5; i++) source.events.push(event(source.events.length + 1) as unknown as PrpEvent);
      await hub.refresh();
    }
    const elapsed = Date.now() - started;
    const total = source.events.length;
    await until(
      () => messages.filter((m) => m.event === "view").some((m) => (m.data as RunView).position === total),
      `a view at position ${total}`,
    );
    abort.abort();
    await reading;

    const positions = messages.filter((m) => m.event === "prp").map((m) => (m.data as { position: number }).position);
    assert.deepEqual(
      positions,
      Array.from({ length: total }, (_, i) => i + 1),
      "every event once, in order",
    );
    const views = messages.filter((m) => m.event === "view").length - 1;
    // At most one view per 250 ms, plus the one that was waiting when the batches began.
    const bound = 2 + Math.floor(elapsed / 250);
    console.log(`# ${batches} batches in ${elapsed} ms: ${views} views after the first (bound ${bound})`);
    assert.ok(views <= bound && views < batches, `${views} views for ${batches} batches in ${elapsed} ms`);
  });
});
