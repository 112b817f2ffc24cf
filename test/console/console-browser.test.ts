import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { judgeRun } from "../cli/authority-run.js";
import { until } from "../support/until.js";
import { liveConsole, shownPositions, WAIT, type LiveConsole } from "./live-console.js";

describe("prp console in Chromium: a live run watched, answered and interrupted from the page", () => {
  let live: LiveConsole;
  before(async () => {
    live = await liveConsole("prp-console-");
  });
  after(() => live?.close());

  const admin = (args: string[]) => live.admin(args);
  const committed = (runId: string) => live.committed(runId);
  const startRun = (script: string) => live.startRun(script);
  /** A POST of a command from the page itself (its cookie, its origin): what a tampered page could send. */
  const postFromPage = (page: Page, runId: string, body: unknown) =>
    page.evaluate(
      async ([id, text]) => {
        const res = await fetch(`api/runs/${encodeURIComponent(id!)}/commands`, { method: "POST", headers: { "content-type": "application/json" }, body: text! });
        return { status: res.status, body: (await res.json()) as { error?: { code: string; path: string; message: string } } };
      },
      [runId, JSON.stringify(body)],
    );

  it("refuses a request without the token, or with a wrong one (401), and serves the page with it", async () => {
    for (const path of ["/", "/api/runs", "/api/runs/stream", `/?token=${"0".repeat(64)}`, "/api/runs?token=wrong"]) {
      const res = await fetch(`${live.console.base}${path}`);
      assert.equal(res.status, 401, `${path} without the right token`);
      await res.body?.cancel();
    }
    const page = await live.browser.context.newPage();
    const refused = await page.goto(`${live.console.base}/?token=${"f".repeat(64)}`);
    assert.equal(refused?.status(), 401);
    assert.match(await page.textContent("body") ?? "", /needs its access token/);
    const served = await page.goto(live.console.url);
    assert.equal(served?.status(), 200);
    assert.equal(new URL(page.url()).search, "", "the token leaves the address bar once the cookie holds it");
    await page.getByText(/No runs yet|Runs \(/).waitFor(WAIT);
    await page.close();
  });

  it("the list updates while a run streams; its permission and question are answered from the page; a reload mid-run resumes the timeline with no gap and no duplicate; bad commands are refused and change nothing", async () => {
    const list = await live.browser.context.newPage();
    await list.goto(live.console.url);
    await list.getByText(/No runs yet|Runs \(/).waitFor(WAIT);

    const { runId, runner } = startRun("permission-input");
    // The list page is never reloaded: the row appears, live, while the run waits for its answer.
    const row = list.locator(`tr[data-run-id="${runId}"]`);
    await row.waitFor(WAIT);
    await row.getByText("live").waitFor(WAIT);

    const page = await live.browser.context.newPage();
    await page.goto(`${live.console.base}/#/run/${runId}`);
    const permission = page.locator('form[data-request-id="request_permission_1"]');
    await permission.waitFor(WAIT);
    const before = committed(runId).length;
    await page.locator(`.timeline li[data-position="${before}"]`).waitFor(WAIT);
    assert.deepEqual(await shownPositions(page), Array.from({ length: before }, (_, i) => i + 1), "the timeline so far, in order");

    // Reload mid-run: the page resumes from the last position it saw.
    await page.reload();
    await permission.waitFor(WAIT);
    await page.locator(`.timeline li[data-position="${before}"]`).waitFor(WAIT);
    assert.deepEqual(await shownPositions(page), Array.from({ length: before }, (_, i) => i + 1), "after the reload: the same events, once each");

    // A malformed answer and an answer to a request nobody asked: typed refusals, nothing queued.
    const commandsBefore = admin(["authority", "runs", "--json"]) as { commands: number };
    const malformed = await postFromPage(page, runId, { type: "request.resolve", payload: { requestId: "request_permission_1", resolution: { action: "maybe" } } });
    assert.deepEqual([malformed.status, malformed.body.error?.code, malformed.body.error?.path], [400, "invalid_answer", "/payload/resolution/action"]);
    const badChoice = await postFromPage(page, runId, { type: "request.resolve", payload: { requestId: "request_permission_1", resolution: { action: "accept", choice: "always" } } });
    assert.deepEqual([badChoice.status, badChoice.body.error?.code], [400, "invalid_answer"]);
    const notAllowed = await postFromPage(page, runId, { type: "runner.shutdown", payload: {} });
    assert.deepEqual([notAllowed.status, notAllowed.body.error?.code], [400, "command_not_allowed"]);
    assert.deepEqual(admin(["authority", "runs", "--json"]), commandsBefore, "no refused command reached the store");

    // The permission, answered from the form: nothing is chosen for the person.
    const sendPermission = permission.getByRole("button", { name: "Send answer" });
    assert.equal(await sendPermission.isDisabled(), true, "no choice is pre-selected: the answer waits for one");
    await permission.getByLabel("Allow").check();
    await permission.getByRole("button", { name: "Send answer" }).click();
    await page.getByTestId("receipt").getByText(/Queued request\.resolve as command_prp_\d+/).waitFor(WAIT);
    // A second answer to the same request: refused by the server, whatever the page shows.
    const second = await postFromPage(page, runId, { type: "request.resolve", payload: { requestId: "request_permission_1", resolution: { action: "accept", choice: "allow" } } });
    assert.deepEqual([second.status, second.body.error?.code, second.body.error?.path], [409, "request_already_answered", "/payload/requestId"]);

    // The question, answered with text.
    const question = page.locator('form[data-request-id="request_input_1"]');
    await question.waitFor(WAIT);
    await question.getByLabel("Your answer").fill("main");
    await question.getByRole("button", { name: "Send answer" }).click();

    await page.getByTestId("terminal").getByText(/completed \/ succeeded/).waitFor(WAIT);
    assert.equal(await runner.exited(), 0, runner.stderr());
    const events = committed(runId);
    assert.deepEqual(judgeRun(events), { runTerminalState: "succeeded", problems: [] });
    const resolved = events.filter((e) => e.eventType === "runtime_request.resolved").map((e) => e.payload);
    assert.equal(resolved.length, 2, "both answers reached the harness");
    assert.match(JSON.stringify(resolved), /main/, "the typed answer is the one the harness got");
    await until(async () => (await shownPositions(page)).length === events.length, `the timeline to show ${events.length} events`, 30_000);
    assert.deepEqual(await shownPositions(page), events.map((e) => e.sourceSeq), "every committed event once, in order, across the reload");
    assert.equal(await page.getByTestId("integrity").textContent(), "complete; 0 duplicate(s), 0 gap(s), 0 out of order");

    // The list, still never reloaded, shows the run's end.
    await row.getByText("succeeded").waitFor(WAIT);
    assert.equal(await row.locator(".event-count").textContent(), String(events.length));

    // After the run ended: no buttons to press; a command sent anyway is refused typed, nothing queued.
    await page.getByTestId("ended-note").waitFor(WAIT);
    for (const name of ["Interrupt the turn", "Cancel the run"]) assert.equal(await page.getByRole("button", { name }).count(), 0, `no "${name}" on an ended run`);
    const commandsAtEnd = admin(["authority", "runs", "--json"]);
    const late = await postFromPage(page, runId, { type: "run.cancel", payload: {} });
    assert.deepEqual([late.status, late.body.error?.code], [409, "run_ended"]);
    assert.deepEqual(admin(["authority", "runs", "--json"]), commandsAtEnd);
    if (process.env.PRP_CONSOLE_SCREENSHOT) await page.screenshot({ path: process.env.PRP_CONSOLE_SCREENSHOT, fullPage: true });

    // A run that does not exist: the page says so; the API refuses it typed.
    await page.goto(`${live.console.base}/#/run/run_does_not_exist`);
    await page.getByTestId("page-error").getByText(/unknown_run/).waitFor(WAIT);
    const unknown = await postFromPage(page, "run_does_not_exist", { type: "run.cancel", payload: {} });
    assert.deepEqual([unknown.status, unknown.body.error?.code], [404, "unknown_run"]);
    await page.close();
    await list.close();
  });

  it("interrupts a turn from the page: the receipt is shown and the run ends interrupted", async () => {
    const { runId, runner } = startRun("interrupted");
    const page = await live.browser.context.newPage();
    await page.goto(`${live.console.base}/#/run/${runId}`);
    await page.locator(".items").getByText("compiling…").waitFor(WAIT);
    await page.getByRole("button", { name: "Interrupt the turn" }).click();
    await page.getByTestId("receipt").getByText(/Queued turn\.interrupt/).waitFor(WAIT);
    await page.getByTestId("terminal").getByText(/^interrupted \//).waitFor(WAIT);
    await runner.exited();
    const events = committed(runId);
    assert.deepEqual(judgeRun(events).problems, []);
    assert.ok(events.some((e) => e.eventType === "turn.interrupted"), events.map((e) => e.eventType).join(", "));
    await page.close();
  });
});
