/**
 * `npm run bench:console`: how long the console's events tab takes to show a run's newest event,
 * for a run of 100,000 events against one of 1,000, as a ratio (near 1 while the page reads only
 * what is in view); and the API's cold GET /v1/runs/ID of each (the fold of the reducer over
 * every event on a run's first read), as a ratio too. Each run is committed straight into a
 * SQLite store in a temp dir (test/console/large-run.ts) and served by a console; the page is
 * headless Chromium. Nothing here asserts a speed.
 *
 *   node dist/bench/console.js [--small N] [--large N]   (defaults 1000 and 100000)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { launchChromium, type Browser } from "../test/console/browser.js";
import { largeRun } from "../test/console/large-run.js";
import { fmt } from "./measure.js";

const { values: args } = parseArgs({
  options: { small: { type: "string", default: "1000" }, large: { type: "string", default: "100000" } },
});
const SMALL = Number.parseInt(args.small!, 10);
const LARGE = Number.parseInt(args.large!, 10);
if (!(SMALL > 0 && LARGE > SMALL)) {
  console.error("usage: node dist/bench/console.js [--small N>0] [--large N>small]");
  process.exit(2);
}
/** Page opens measured per run; the median is reported. */
const OPENS = 5;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The cold read of a run of `total` events, and the median time for its events tab to show the newest. */
async function measure(browser: Browser, total: number): Promise<{ coldGetMs: number; openMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), "prp-bench-console-"));
  const run = await largeRun(join(dir, "store"));
  await run.commit(1, total);
  const server = await run.serve();
  try {
    const url = new URL(server.url);
    const headers = { authorization: `Bearer ${server.token}` };
    // A run that is not there first: the server's own first-request costs are not the fold's.
    await (await fetch(`${url.origin}/v1/runs/run_absent`, { headers })).arrayBuffer();
    let started = performance.now();
    const res = await fetch(`${url.origin}/v1/runs/run_1`, { headers });
    if (res.status !== 200) throw new Error(`GET /v1/runs/run_1 answered ${res.status}`);
    await res.arrayBuffer();
    const coldGetMs = performance.now() - started;
    const opens: number[] = [];
    for (let i = 0; i < OPENS; i++) {
      const page = await browser.context.newPage();
      await page.goto(server.url);
      started = performance.now();
      await page.goto(new URL(`/#/run/run_1/events`, server.url).href);
      await page.getByTestId("events-list").locator(`li[data-seq="${total}"]`).waitFor({ timeout: 120_000 });
      opens.push(performance.now() - started);
      await page.close();
    }
    return { coldGetMs, openMs: median(opens) };
  } finally {
    await server.close();
    await run.store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const browser = await launchChromium();
try {
  const small = await measure(browser, SMALL);
  const large = await measure(browser, LARGE);
  const line = (what: string, s: number, l: number) =>
    console.log(
      `${what}: ${fmt(s)} ms at ${SMALL} events, ${fmt(l)} ms at ${LARGE}: ratio ${(l / s).toFixed(2)} (events ×${LARGE / SMALL})`,
    );
  line("events tab shows the newest event", small.openMs, large.openMs);
  line("cold GET /v1/runs/ID", small.coldGetMs, large.coldGetMs);
} finally {
  await browser.close();
}
