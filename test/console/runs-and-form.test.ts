import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { PrpClient } from "../../src/client/client.js";
import type { RunSpec } from "../../src/contract/api/generated/types.js";
import { until } from "../support/until.js";
import { liveConsole, WAIT, type LiveConsole } from "./live-console.js";

/** The run ids the runs list shows, in page order. */
const shownRuns = (page: Page) =>
  page
    .locator('[data-testid="runs-table"] tbody tr')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-run-id") ?? ""));

/** Waits until the runs list shows exactly `expected` (in any order). */
async function untilShown(page: Page, expected: string[], what: string) {
  const want = JSON.stringify([...expected].sort());
  let shown: string[] = [];
  await until(
    async () => {
      shown = (await shownRuns(page)).sort();
      return JSON.stringify(shown) === want;
    },
    () => `${what}: the list to show ${want}, it shows ${JSON.stringify(shown)}`,
  );
}

describe("prp console in Chromium: the runs list, the new-run form, the queue and workers", () => {
  let live: LiveConsole;
  let api: PrpClient;
  before(async () => {
    live = await liveConsole("prp-console-runs-");
    api = new PrpClient({ baseUrl: live.console.base, token: live.console.token });
  });
  after(async () => {
    await live?.close();
    assert.deepEqual(live?.cspViolations, [], "the console's page ran under its CSP without a violation");
  });

  /** A page of the console at `hash`, entered through the URL with the token. */
  const open = async (hash: string) => {
    const page = await live.watched();
    await page.goto(live.console.url);
    await page.goto(`${live.console.base}/${hash}`);
    return page;
  };
  const create = async (spec: RunSpec) => (await api.createRun(spec)).run.runId;

  it("a run started from the form (sent twice at once: one run) is queued with its wait reason, cancelled from the queue after a confirm, and reads cancelled; its hostile prompt is text", async () => {
    const page = await open("#/new");
    const hostile = `<img src=x onerror="window.pwned=1"><b>bold</b> \u001b[31mred`;
    await page
      .getByTestId("agent-script")
      .locator("option", { hasText: /^happy-path$/ })
      .waitFor({ state: "attached", ...WAIT });
    assert.equal(await page.getByTestId("agent-script").inputValue(), "happy-path", "the default script");
    await page.getByLabel("Prompt").fill(`${hostile}\nthe second line is not in the list`);
    await page.getByLabel("Workspace").fill("ws-form");
    await page.getByLabel("Labels").fill("suite=form, team=blue");
    await page.getByLabel("Priority").fill("5");
    // Two submissions in one tick, as a double click can make: one Idempotency-Key, so one run.
    await page.evaluate(
      'const f = document.querySelector("[data-testid=new-run-form]"); f.requestSubmit(); f.requestSubmit()',
    );
    await page.waitForURL(/#\/run\/[^/]+$/, WAIT);
    const runId = decodeURIComponent(/#\/run\/([^/]+)$/.exec(page.url())![1]!);
    const created = (await api.listRuns({ labels: { suite: "form" } })).runs;
    assert.deepEqual(
      created.map((r) => r.runId),
      [runId],
      "one run, however often the form was sent",
    );
    assert.deepEqual(created[0]!.spec, {
      agent: { kind: "fake", script: "happy-path" },
      prompt: `${hostile}\nthe second line is not in the list`,
      workspace: "ws-form",
      labels: { suite: "form", team: "blue" },
      priority: 5,
    });

    // The queue: the run waits, and says why; a first click on cancel only asks.
    await page.goto(`${live.console.base}/#/workers`);
    const queued = page.getByTestId("queue-table").locator(`tr[data-run-id="${runId}"]`);
    await queued.waitFor(WAIT);
    assert.equal(await queued.getByTestId("wait-reason").textContent(), "no worker registered");
    assert.equal(await page.getByTestId("workers-table").count(), 0, "no worker has been added");
    await queued.getByTestId("cancel-queued").click();
    assert.equal((await api.getRun(runId)).run.state, "queued", "the first click cancels nothing");
    await queued.getByTestId("confirm-cancel").click();
    await queued.waitFor({ state: "detached", ...WAIT });
    const cancelled = (await api.getRun(runId)).run;
    assert.deepEqual([cancelled.state, cancelled.dispatch?.endReason], ["ended", "cancelled"]);

    // The list: cancelled, its prompt's first line as text, nothing of it run as HTML.
    await page.goto(`${live.console.base}/#/`);
    const row = page.locator(`tr[data-run-id="${runId}"]`);
    await row.getByTestId("run-state").getByText("cancelled").waitFor(WAIT);
    assert.equal(await row.locator(".run-prompt").textContent(), hostile);
    assert.equal(await row.locator("img, b").count(), 0, "the prompt's markup is not markup");
    assert.equal(await page.evaluate("window.pwned"), undefined);
    assert.match((await row.locator("td").nth(1).textContent()) ?? "", /^happy-path script$/);
    assert.match((await row.locator("time").getAttribute("datetime")) ?? "", /^\d{4}-\d\d-\d\dT/);
    assert.match((await row.locator("time").textContent()) ?? "", /just now|s ago|min ago/);
    await page.close();
  });

  it("a refused run is said in words, its field marked and focused; nothing is created", async () => {
    const page = await open("#/new");
    await page
      .getByTestId("agent-script")
      .locator("option", { hasText: /^happy-path$/ })
      .waitFor({ state: "attached", ...WAIT });
    await page.getByLabel("Agent").selectOption("profile");
    // A name the catalog lacks, as a page whose list is older than the authority's catalog would send.
    await page.evaluate(
      'document.querySelector("[data-testid=agent-profile]").add(new Option("no-such-agent", "no-such-agent"))',
    );
    await page.getByTestId("agent-profile").selectOption("no-such-agent");
    await page.getByLabel("Prompt").fill("refused");
    await page.getByLabel("Labels").fill("suite=refused");
    await page.getByTestId("start-run").click();
    const error = page.getByTestId("form-error");
    await error.waitFor(WAIT);
    assert.match((await error.textContent()) ?? "", /^agent_profile_unknown: no agent profile named "no-such-agent"/);
    assert.equal(await page.getByTestId("agent-profile").getAttribute("aria-invalid"), "true");
    assert.equal(await page.evaluate("document.activeElement?.id"), "agent-profile", "the field is focused");

    // A label the API refuses: the labels field is the one marked.
    await page.getByTestId("agent-profile").selectOption("claude");
    await page.getByLabel("Labels").fill("Suite=refused");
    await page.getByTestId("start-run").click();
    await error.getByText(/^invalid_request: /).waitFor(WAIT);
    assert.equal(await page.getByLabel("Labels").getAttribute("aria-invalid"), "true");
    assert.equal(await page.evaluate("document.activeElement?.id"), "labels");
    assert.equal((await api.listRuns({ text: "refused" })).runs.length, 0, "no refused run was created");
    assert.match(page.url(), /#\/new$/, "the page stays on the form");
    await page.close();
  });

  it("the filters narrow the list by state, label, agent and text; a page at a time", async () => {
    const specs: RunSpec[] = [
      { agent: { kind: "fake", script: "happy-path" }, prompt: "filters run 1", labels: { suite: "filters" } },
      { agent: { kind: "fake", script: "interrupted" }, prompt: "filters run 2", labels: { suite: "filters" } },
      { agent: { kind: "profile", profile: "claude" }, prompt: "filters run 3", labels: { suite: "filters" } },
      {
        agent: { kind: "command", command: "node /opt/agents/my-agent.js --fast" },
        prompt: "filters run 4 (claude is only mentioned)",
        labels: { suite: "filters" },
      },
    ];
    const ids: string[] = [];
    for (const spec of specs) ids.push(await create(spec));
    await api.cancelRun(ids[0]!);
    const page = await open("#/");
    await page.getByTestId("runs-table").waitFor(WAIT);
    await page.getByTestId("filter-label").fill("suite=filters");
    await untilShown(page, ids, "by label");
    const row = (i: number) => page.locator(`tr[data-run-id="${ids[i]}"]`);
    assert.equal(await row(3).locator("td").nth(1).textContent(), "my-agent.js command", "the command's program");
    assert.equal(await row(2).locator("td").nth(1).textContent(), "claude profile");
    assert.equal(await row(1).locator(".state-note").textContent(), " no worker registered", "the wait reason");

    await page.getByTestId("filter-agent").fill("claude");
    await untilShown(page, [ids[2]!], "by agent: a prompt that mentions it is not its agent");
    await page.getByTestId("filter-agent").fill("my-agent");
    await untilShown(page, [ids[3]!], "by a command's program");
    await page.getByTestId("filter-agent").fill("");
    await page.getByTestId("filter-search").fill("filters run 2");
    await untilShown(page, [ids[1]!], "by text");
    await page.getByTestId("filter-search").fill("");
    await page.getByTestId("filter-state").selectOption("ended");
    await untilShown(page, [ids[0]!], "by state: the cancelled one");
    await page.getByTestId("filter-state").selectOption("queued");
    await untilShown(page, ids.slice(1), "by state: the queued ones");
    // A label filter the API refuses is said; a fixed one lists again.
    await page.getByTestId("filter-label").fill("Suite=filters");
    await page
      .getByTestId("filter-refused")
      .getByText(/invalid_request/)
      .waitFor(WAIT);
    await page.getByTestId("filter-label").fill("suite=filters");
    await untilShown(page, ids.slice(1), "the filter fixed");

    // Pages: 26 runs are a full page and one more.
    const paged: string[] = [];
    for (let i = 0; i < 26; i++)
      paged.push(await create({ agent: { kind: "fake", script: "happy-path" }, labels: { suite: "pages" } }));
    await page.getByTestId("filter-state").selectOption("");
    await page.getByTestId("filter-label").fill("suite=pages");
    // Newest first: the first page is the last 25 created.
    await untilShown(page, paged.slice(1), "the first page");
    assert.equal(await page.getByTestId("runs-prev").isDisabled(), true);
    await page.getByTestId("runs-next").click();
    await untilShown(page, paged.slice(0, 1), "the second page");
    assert.equal(await page.getByTestId("runs-next").isDisabled(), true, "the last page");
    await page.getByTestId("runs-prev").click();
    await untilShown(page, paged.slice(1), "back to the first page");
    await page.close();
  });

  it("a run waiting for a permission is marked in the list and counted in the tab's title", async () => {
    const page = await open("#/");
    await page.getByText(/Runs \(/).waitFor(WAIT);
    const { runId } = live.startAgentRun("permission");
    const row = page.locator(`tr[data-run-id="${runId}"]`);
    await row.getByTestId("waiting-badge").waitFor(WAIT);
    assert.equal(await row.getByTestId("waiting-badge").textContent(), "Waiting for you (1)");
    await until(async () => (await page.title()) === "(1) Runs · PRP console", "the title to count one waiting run");
    // The count follows the person to another page.
    await page.goto(`${live.console.base}/#/workers`);
    await until(async () => (await page.title()) === "(1) Queue and workers · PRP console", "the title on #/workers");
    await page.close();
  });
});
