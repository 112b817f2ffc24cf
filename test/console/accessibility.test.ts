import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { until } from "../support/until.js";
import { axeViolations, describeViolations } from "./axe.js";
import { contrastRatio, parseColour } from "./contrast.js";
import { liveConsole, WAIT, type LiveConsole } from "./live-console.js";
import { screenshot } from "./screenshots.js";

type Scheme = "light" | "dark";
const SCHEMES: Scheme[] = ["light", "dark"];
const PHONE = { width: 390, height: 844 };

/** A page of the console: its address, and what shows it has loaded (roles, landmarks and the plan's test ids). */
interface ConsolePage {
  name: string;
  hash: string;
  ready: (page: Page) => Promise<void>;
}

/** The focused element as the keyboard left it: what it is, where, and its focus ring. */
interface FocusStop {
  name: string;
  region: "header" | "main" | "other";
  inRequestForm: boolean;
  isButton: boolean;
  outlineStyle: string;
  outlineWidth: number;
  outlineColor: string;
  /** The element's own background, and the first opaque one behind it (where the ring is drawn). */
  own: string;
  behind: string;
}

/** Read in the page (a string: this code's types have no DOM). */
const FOCUSED = `(() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const css = getComputedStyle(el);
  const opaque = (bg) => bg !== "transparent" && !/^rgba\\(.*,\\s*0\\)$/.test(bg);
  let behind = "rgb(255, 255, 255)";
  for (let p = el.parentElement; p; p = p.parentElement) {
    const bg = getComputedStyle(p).backgroundColor;
    if (opaque(bg)) { behind = bg; break; }
  }
  const label = (el.getAttribute("aria-label") ?? el.labels?.[0]?.textContent ?? el.textContent ?? "").trim().slice(0, 40);
  return {
    name: el.tagName.toLowerCase() + (label ? ' "' + label + '"' : ""),
    region: el.closest("header") ? "header" : el.closest("main") ? "main" : "other",
    inRequestForm: el.closest("form[data-request-id]") !== null,
    isButton: el.tagName === "BUTTON",
    outlineStyle: css.outlineStyle,
    outlineWidth: parseFloat(css.outlineWidth),
    outlineColor: css.outlineColor,
    own: css.backgroundColor,
    behind,
  };
})()`;

/** What makes the page wider than the screen: the deepest elements whose right edge passes it. */
const OVERFLOWING = `[...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
  .filter((e, _, all) => !all.some((o) => o !== e && e.contains(o)))
  .slice(0, 5)
  .map((e) => e.tagName.toLowerCase() + (e.className ? "." + String(e.className).split(" ").join(".") : ""))`;

/** The ring's problems at one stop: none when it is drawn, 2 px or more, 3:1 against the page and the control. */
function ringProblems(stop: FocusStop): string[] {
  const problems: string[] = [];
  if (stop.outlineStyle === "none" || stop.outlineWidth < 2)
    return [`${stop.name}: no focus ring (outline ${stop.outlineStyle} ${stop.outlineWidth}px)`];
  const ring = parseColour(stop.outlineColor);
  const behind = parseColour(stop.behind);
  const own = parseColour(stop.own);
  if (!ring || !behind) return [`${stop.name}: unreadable colours ${stop.outlineColor} on ${stop.behind}`];
  const against = [
    ["the page", behind.rgb] as const,
    ...(own && own.alpha === 1 ? [["the control", own.rgb] as const] : []),
  ];
  for (const [what, colour] of against) {
    const ratio = contrastRatio(ring.rgb, colour);
    if (ratio < 3)
      problems.push(`${stop.name}: focus ring ${stop.outlineColor} is ${ratio.toFixed(2)}:1 against ${what} (< 3:1)`);
  }
  return problems;
}

describe("the console's look and accessibility in Chromium: axe-core, light and dark, desktop and 390 px", () => {
  let live: LiveConsole;
  /** A run that waits for the person's answers (a question form on its page), and a run that failed. */
  let waiting: string;
  let failed: string;
  before(async () => {
    live = await liveConsole("prp-a11y-");
    waiting = live.startRun("interactive-question").runId;
    const error = live.startRun("error");
    failed = error.runId;
    await error.runner.exited();
  });
  after(async () => {
    await live?.close();
    assert.deepEqual(live?.cspViolations, [], "the console's page ran under its CSP without a violation");
  });

  const conversation = (): ConsolePage => ({
    name: "conversation",
    hash: `#/run/${waiting}`,
    ready: (p) => p.locator("form[data-request-id]").first().waitFor(WAIT),
  });
  const pages = (): ConsolePage[] => [
    { name: "runs", hash: "#/", ready: (p) => p.locator(`tr[data-run-id="${failed}"]`).waitFor(WAIT) },
    { name: "new-run", hash: "#/new", ready: (p) => p.getByTestId("new-run-form").waitFor(WAIT) },
    {
      name: "workers",
      hash: "#/workers",
      ready: (p) => p.locator("main h1", { hasText: "Queue and workers" }).waitFor(WAIT),
    },
    conversation(),
    {
      name: "failure",
      hash: `#/run/${failed}`,
      ready: (p) => p.locator('[data-testid="failure-card"], [data-testid="failure"]').first().waitFor(WAIT),
    },
    {
      name: "events",
      hash: `#/run/${waiting}/events`,
      ready: (p) => p.locator("[data-seq], .timeline li").first().waitFor(WAIT),
    },
  ];

  /** `use` run on a new tab in the scheme (and size), holding the console's token; the tab is closed after. */
  const inTab = async (
    scheme: Scheme,
    size: { width: number; height: number } | undefined,
    use: (page: Page) => Promise<void>,
  ) => {
    const page = await live.watched();
    try {
      await page.emulateMedia({ colorScheme: scheme, reducedMotion: "reduce" });
      if (size) await page.setViewportSize(size);
      await page.goto(live.console.url);
      await use(page);
    } finally {
      // Closed whatever happened: each open tab holds one of the browser's few connections to the console.
      await page.close();
    }
  };
  const open = async (page: Page, target: ConsolePage) => {
    await page.goto(`${live.console.base}/${target.hash}`);
    await target.ready(page);
    // Loaded: nothing in the page still says it is loading.
    await until(
      async () => (await page.locator("main [role=status]", { hasText: /^Loading/ }).count()) === 0,
      `${target.hash} to finish loading`,
    );
  };

  /** The documentation's screenshots (docs/console-NAME.png): which view of which page is which image. */
  const shotName = (scheme: Scheme, phone: boolean, page: string): string | undefined => {
    if (scheme === "light" && !phone) return page === "failure" ? undefined : page;
    if (scheme === "dark" && !phone) return page === "conversation" ? "dark" : undefined;
    if (scheme === "light" && phone)
      return page === "runs" ? "phone" : page === "conversation" ? "phone-run" : undefined;
    return undefined;
  };

  for (const scheme of SCHEMES)
    for (const phone of [false, true])
      it(`every page: no serious or critical axe violation (${scheme}, ${phone ? "390 px, no sideways scroll" : "desktop"})`, () =>
        inTab(scheme, phone ? PHONE : undefined, async (page) => {
          const problems: string[] = [];
          for (const target of pages()) {
            await open(page, target);
            problems.push(...describeViolations(`${target.hash} (${scheme})`, await axeViolations(page)));
            if (phone) {
              const width = await page.evaluate<number>("document.documentElement.scrollWidth");
              if (width > PHONE.width)
                problems.push(
                  `${target.hash} (${scheme}): ${width} px wide on a 390 px screen, from ${(await page.evaluate<string[]>(OVERFLOWING)).join(", ")}`,
                );
            }
            const shot = shotName(scheme, phone, target.name);
            if (shot) await screenshot(page, shot);
          }
          assert.equal(problems.length, 0, `\n${problems.join("\n")}`);
        }));

  for (const scheme of SCHEMES)
    it(`keyboard (${scheme}): Tab goes to the nav links in order, then into the page to its form; every stop shows a ring of 3:1`, () =>
      inTab(scheme, undefined, async (page) => {
        await open(page, conversation());
        // Keys go to the tab in front.
        await page.bringToFront();
        const stops: FocusStop[] = [];
        // Until a field of the request's form and a button have been focused; bounded, 80 stops is far past both.
        const done = () => stops.some((s) => s.inRequestForm) && stops.some((s) => s.isButton);
        for (let i = 0; i < 80 && !done(); i++) {
          await page.keyboard.press("Tab");
          const stop = await page.evaluate<FocusStop | null>(FOCUSED);
          if (stop) stops.push(stop);
        }
        const walk = stops.map((s) => `${s.region}: ${s.name}`).join("\n");
        assert.deepEqual(
          stops.slice(0, 3).map((s) => s.name),
          ['a "PRP console"', 'a "New run"', 'a "Queue and workers"'],
          `the first stops are the nav links, in order:\n${walk}`,
        );
        assert.equal(stops[3]?.region, "main", `after the nav, the page's own controls:\n${walk}`);
        assert.ok(done(), `Tab reaches the form that waits for the person, and a button:\n${walk}`);
        const problems = stops.flatMap(ringProblems);
        assert.equal(problems.length, 0, `\n${problems.join("\n")}`);
      }));

  it("each page has a title of its own", () =>
    inTab("light", undefined, async (page) => {
      const titles = new Map<string, string>();
      for (const target of pages().filter((p) => p.name !== "failure")) {
        await open(page, target);
        titles.set(target.hash, await page.title());
      }
      assert.equal(new Set(titles.values()).size, titles.size, JSON.stringify(Object.fromEntries(titles), null, 2));
    }));

  it("at 390 px a table's rows are cards whose cells show their column's name", () =>
    inTab("light", PHONE, async (page) => {
      const unlabelled: string[] = [];
      for (const target of pages().filter((p) => ["runs", "workers"].includes(p.name))) {
        await open(page, target);
        const cells = await page.evaluate<{ text: string; label: string }[]>(`[...document.querySelectorAll("tbody td")]
            .map((td) => ({ text: td.textContent.trim().slice(0, 30), label: getComputedStyle(td, "::before").content }))`);
        for (const cell of cells)
          if (!/^".+"$/.test(cell.label)) unlabelled.push(`${target.hash}: cell "${cell.text}" shows no label`);
      }
      assert.equal(unlabelled.length, 0, `\n${unlabelled.join("\n")}`);
    }));

  it("the check can fail: an unlabelled field and low-contrast text are serious violations", async () => {
    const page = await live.browser.context.newPage();
    try {
      await page.setContent(`<!doctype html><html lang="en"><head><title>Bad page</title></head><body><main>
      <h1>Bad page</h1><p style="color:#b0b0b0;background:#ffffff">Hard to read</p><input type="text">
      </main></body></html>`);
      const rules = (await axeViolations(page)).map((v) => v.rule).sort();
      assert.deepEqual(rules, ["color-contrast", "label"], JSON.stringify(rules));
    } finally {
      await page.close();
    }
  });
});
