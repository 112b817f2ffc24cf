import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SESSION_ITEM_TEXT } from "../../src/api/run-view.js";
import type { EventPage, Run } from "../../src/contract/api/generated/types.js";
import type { ConsoleServer } from "../../src/console/server.js";
import { launchChromium, type Browser } from "./browser.js";
import { largeRun, PHASES, RUN } from "./large-run.js";
import { eventsAtBottom, shownPositions, WAIT } from "./live-console.js";

const TOTAL = 100_000;
/** The events tab holds the rows in view and a margin (40 each side): a bound with slack. */
const MAX_SHOWN_ROWS = 200;
/** The hostile event, among the newest. */
const HOSTILE = TOTAL - 10;

describe("prp console in Chromium: a 100,000-event run's history opens at its end, reads by range, filters and follows", () => {
  let dir: string;
  let run: Awaited<ReturnType<typeof largeRun>>;
  let server: ConsoleServer;
  let browser: Browser;
  const commit = (from: number, to: number) => run.commit(from, to);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-console-large-"));
    run = await largeRun(join(dir, "store"), { hostile: HOSTILE });
    await commit(1, TOTAL - 1);
    server = await run.serve();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await run?.store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("opens on the newest events with a bounded DOM, loads the first by range, follows deep links, filters, and follows live", async (t) => {
    // The cold read: the API folds the reducer over every event on the run's first GET.
    const base = new URL(server.url).origin;
    const headers = { authorization: `Bearer ${server.token}` };
    let started = performance.now();
    assert.equal((await fetch(`${base}/v1/runs/${RUN}`, { headers })).status, 200);
    t.diagnostic(`cold GET /v1/runs/${RUN} of ${TOTAL - 1} events: ${Math.round(performance.now() - started)} ms`);
    started = performance.now();
    await fetch(`${base}/v1/runs/${RUN}`, { headers });
    t.diagnostic(`warm GET /v1/runs/${RUN}: ${Math.round(performance.now() - started)} ms`);

    const page = await browser.context.newPage();
    await page.goto(server.url);
    started = performance.now();
    await page.goto(new URL(`/#/run/${RUN}/events`, server.url).href);
    const list = page.getByTestId("events-list");
    const row = (seq: number) => list.locator(`li[data-seq="${seq}"]`);
    await row(TOTAL - 1).waitFor(WAIT);
    t.diagnostic(`the events tab shows event ${TOTAL - 1} ${Math.round(performance.now() - started)} ms after opening`);
    await eventsAtBottom(page);
    const rows = () => list.locator("li").count();
    assert.ok((await rows()) <= MAX_SHOWN_ROWS, `the page holds the rows in view, not ${await rows()}`);
    const newest = await shownPositions(page);
    assert.deepEqual(
      newest,
      Array.from({ length: newest.length }, (_, i) => TOTAL - newest.length + i),
      "the newest events, contiguous, in order",
    );

    // The hostile event: its summary is bounded text, its payload bounded and escaped.
    const hostile = row(HOSTILE);
    const summary = (await hostile.locator(".summary").textContent()) ?? "";
    assert.ok(summary.length <= 200, `a bounded summary: ${summary.length} characters`);
    assert.match(summary, /␛\[31mred␛\[0m <img src=x/, "ANSI escapes shown, HTML as text");
    await hostile.locator(".event-toggle").click();
    const payload = hostile.getByTestId("event-payload");
    const payloadText = (await payload.textContent()) ?? "";
    assert.ok(payloadText.length < 110_000, `a bounded payload: ${payloadText.length} characters`);
    assert.match(payloadText, /\\u001b\[31mred/, "the escape as JSON shows it");
    assert.match(payloadText, /more characters: copy the event/);
    assert.equal(await hostile.locator("img, b").count(), 0, "no element made of the agent's text");
    assert.equal(await page.evaluate("window.pwned"), undefined);
    await hostile.locator(".event-toggle").click();
    await payload.waitFor({ state: "detached", timeout: WAIT.timeout });

    // Live: the next event appends while the reader is at the bottom.
    await eventsAtBottom(page);
    let committedAt = performance.now();
    await commit(TOTAL, TOTAL);
    await row(TOTAL).waitFor(WAIT);
    t.diagnostic(`event ${TOTAL}: commit to row in ${Math.round(performance.now() - committedAt)} ms`);
    await eventsAtBottom(page);
    assert.deepEqual(
      await page.evaluate("Object.keys(sessionStorage)"),
      ["prp-console-token"],
      "no events in sessionStorage: the token alone",
    );

    // Scrolled to the top: the first events, read by range; new events do not move the reader.
    await list.evaluate((el) => (el.scrollTop = 0));
    await row(1).waitFor(WAIT);
    assert.ok((await rows()) <= MAX_SHOWN_ROWS, `still a window of rows: ${await rows()}`);
    const top = await shownPositions(page);
    assert.deepEqual(top.slice(0, 3), [1, 2, 3], "the first events, from the first");
    await commit(TOTAL + 1, TOTAL + 10);
    const pill = page.getByTestId("new-events-pill");
    await pill.getByText("10 new events").waitFor(WAIT);
    assert.equal(await list.evaluate((el) => el.scrollTop), 0, "not scrolled away from what the reader reads");
    await page
      .getByTestId("live-announcer")
      .getByText(/new events?\./)
      .waitFor(WAIT);
    await pill.click();
    await row(TOTAL + 10).waitFor(WAIT);
    await eventsAtBottom(page);
    await pill.waitFor({ state: "detached", timeout: WAIT.timeout });

    // A deep link to event 50,000: read around it, scrolled to it, marked and focused.
    committedAt = performance.now();
    await page.goto(new URL(`/#/run/${RUN}/events/50000`, server.url).href);
    const linked = list.locator('li[data-seq="50000"][aria-current="true"]');
    await linked.waitFor(WAIT);
    t.diagnostic(`deep link to event 50000: shown in ${Math.round(performance.now() - committedAt)} ms`);
    assert.equal(await page.evaluate("document.activeElement?.getAttribute('data-seq')"), "50000", "focused");
    assert.ok(await linked.isVisible(), "in view");
    assert.equal(await list.locator('[aria-current="true"]').count(), 1, "one event marked");
    assert.equal(await linked.locator(".type").textContent(), "runtime.phase.changed");

    // The type filter and the search, on the server, page on through every event.
    await page.getByTestId("event-filter-type").fill("runtime.phase.changed");
    await list.locator(`li[data-seq="${PHASES.at(-1)}"]`).waitFor(WAIT);
    assert.deepEqual(await shownPositions(page), PHASES, "the phase changes, and nothing else");
    await page.getByTestId("event-filter-type").fill("");
    await page.getByTestId("event-search").fill("delta 31337");
    await row(31337).waitFor(WAIT);
    await page.getByText(`scanned ${(TOTAL + 10).toLocaleString("en")} of`).waitFor(WAIT);
    assert.deepEqual(await shownPositions(page), [31337], "the one event whose text holds it");
    // Cleared: the whole run again; the one match left the reader at the bottom, so at the newest.
    await page.getByTestId("event-search").fill("");
    await row(TOTAL + 10).waitFor(WAIT);
    await page.getByText(`${(TOTAL + 10).toLocaleString("en")} events.`).waitFor(WAIT);

    // The page's JS heap after reading the whole run's ends and a deep link: a few thousand events kept at most.
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send("HeapProfiler.collectGarbage");
    const heap = (await cdp.send("Runtime.getHeapUsage")).usedSize;
    t.diagnostic(`page heap: ${heap} bytes`);
    assert.ok(heap < 60_000_000, `the page's heap is ${heap} bytes, not the run's (about 30 MB of JSON)`);
    await page.close();
  });

  it("the run's view is bounded (items carry the end of their text); events are read by range and filtered", async () => {
    const base = new URL(server.url).origin;
    const headers = { authorization: `Bearer ${server.token}` };
    const view = (await (await fetch(`${base}/v1/runs/${RUN}`, { headers })).json()) as Run & {
      session: { items: Array<{ text: string; textLength: number }> };
    };
    assert.equal(view.position, TOTAL + 10);
    assert.equal(view.run.eventCount, TOTAL + 10);
    const read = async (query: string) =>
      (await (await fetch(`${base}/v1/runs/${RUN}/events?${query}`, { headers })).json()) as EventPage;
    const page = await read("after=100&limit=5");
    assert.deepEqual(
      page.events.map((e) => [e.seq, (e.event as { sourceSeq: number }).sourceSeq]),
      [101, 102, 103, 104, 105].map((n) => [n, n]),
    );
    // A sparse filter scans a bounded stretch a request, and says how far it got.
    const phases = await read("type=runtime.phase.changed");
    assert.deepEqual(
      phases.events.map((e) => e.seq),
      [],
    );
    assert.ok(phases.next > 0 && phases.next < PHASES[0]!, `the first page scanned to ${phases.next}`);
    const item = view.session.items[0]!;
    assert.ok(
      item.textLength > item.text.length &&
        item.text.length <= SESSION_ITEM_TEXT &&
        item.text.endsWith(`delta ${TOTAL + 10}`),
      `${item.textLength} characters, ${item.text.length} shown`,
    );
  });
});
