import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { eventLines, judgeRun } from "../cli/authority-run.js";
import { until } from "../support/until.js";
import { liveConsole, postFromPage, shownPositions, WAIT, type LiveConsole } from "./live-console.js";
import { screenshot } from "./screenshots.js";

describe("prp console in Chromium: a live run watched, answered and interrupted from the page", () => {
  let live: LiveConsole;
  before(async () => {
    live = await liveConsole("prp-console-");
  });
  after(async () => {
    await live?.close();
    assert.deepEqual(live?.cspViolations, [], "the console's page ran under its CSP without a violation");
  });

  const admin = (args: string[]) => live.admin(args);
  const committed = (runId: string) => live.committed(runId);
  const startRun = (script: string) => live.startRun(script);
  it("the API refuses a request without the token in its header (401); the page takes the token from its URL into this tab, and no cookie", async () => {
    for (const path of ["/v1/runs", "/v1/runs/any/events", `/v1/runs?token=${live.console.token}`, "/bundles/any"]) {
      const res = await fetch(`${live.console.base}${path}`, {
        headers: { cookie: `prp_console_token=${live.console.token}`, accept: "text/event-stream" },
      });
      assert.equal(res.status, 401, `${path} without the token in Authorization`);
      assert.equal(((await res.json()) as { code: string }).code, "token_missing");
    }
    assert.equal((await fetch(`${live.console.base}/`)).status, 200, "the page's files hold no data: served to anyone");
    const page = await live.watched();
    await page.goto(`${live.console.base}/`);
    await page
      .getByTestId("token-missing")
      .getByText(/open the URL that the console printed/)
      .waitFor(WAIT);
    await page.goto(`${live.console.base}/?token=${"f".repeat(64)}`);
    const wrong = await postFromPage(page, "any", {});
    assert.deepEqual([wrong.status, wrong.body.error?.code], [401, "token_invalid"]);
    await page
      .getByTestId("runs-refused")
      .getByText(/401 token_invalid/)
      .waitFor(WAIT);
    const served = await page.goto(live.console.url);
    assert.equal(served?.status(), 200);
    await page.getByText(/No runs yet|Runs \(/).waitFor(WAIT);
    assert.equal(new URL(page.url()).search, "", "the token leaves the address bar");
    assert.equal(await page.evaluate('sessionStorage.getItem("prp-console-token")'), live.console.token);
    assert.deepEqual(await live.browser.context.cookies(), [], "no cookie at all");
    await page.close();
  });

  it("another server on 127.0.0.1, in the same browser, gets no token; it cannot frame the console", async () => {
    const console_ = await live.watched();
    await console_.goto(live.console.url);
    await console_.getByText(/No runs yet|Runs \(/).waitFor(WAIT);
    // A plain server on another loopback port: it records what the browser sends it, and frames the console.
    const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
    const other: Server = createServer((req, res) => {
      seen.push({ url: req.url ?? "", headers: req.headers });
      if (req.url === "/") {
        res.writeHead(200, { "content-type": "text/html" });
        return void res.end(`<img src="/pixel"><script>fetch("/probe", { credentials: "include" }).then(() => (window.probed = true));</script>
          <iframe id="console" src="${live.console.url}" onload="window.framed = true"></iframe>`);
      }
      res.writeHead(204).end();
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const page = await live.browser.context.newPage();
      await page.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
      await page.waitForFunction("window.probed && window.framed", undefined, WAIT);
      assert.ok(
        seen.some((r) => r.url === "/probe") && seen.some((r) => r.url === "/pixel"),
        JSON.stringify(seen.map((r) => r.url)),
      );
      for (const request of seen) {
        assert.equal(request.headers.cookie, undefined, `no cookie on ${request.url}`);
        assert.ok(!JSON.stringify(request).includes(live.console.token), `no token in ${request.url}`);
      }
      // The framed console is refused (frame-ancestors 'none', X-Frame-Options): an error page, not the console.
      const frame = page.frames().find((f) => f !== page.mainFrame());
      assert.ok(frame, "the iframe is there");
      const shown = await frame
        .evaluate<string>('document.body?.innerText ?? ""')
        .catch((err: Error) => `inaccessible: ${err.message}`);
      assert.doesNotMatch(shown, /PRP console|Runs \(|No runs yet/, "the console did not render in the frame");
      await page.close();
    } finally {
      await new Promise<void>((resolve) => {
        other.close(() => resolve());
        other.closeAllConnections();
      });
    }
    await console_.close();
  });

  it("the list updates while a run streams; its permission and question are answered from the page; a reload mid-run resumes the timeline with no gap and no duplicate; bad commands are refused and change nothing", async () => {
    const list = await live.watched();
    await list.goto(live.console.url);
    await list.getByText(/No runs yet|Runs \(/).waitFor(WAIT);

    const { runId, runner } = startRun("permission-input");
    // The list page is never reloaded: the row appears, live, while the run waits for its answer.
    const row = list.locator(`tr[data-run-id="${runId}"]`);
    await row.waitFor(WAIT);
    await row.getByText("live").waitFor(WAIT);

    const page = await live.watched();
    await page.goto(`${live.console.url}#/run/${runId}`);
    const permission = page.locator('form[data-request-id="request_permission_1"]');
    await permission.waitFor(WAIT);
    // The run's event history, beside it in a second tab.
    const history = await live.watched();
    await history.goto(`${live.console.url}#/run/${runId}/events`);
    const before = committed(runId).length;
    const historyRow = (seq: number) => history.getByTestId("events-list").locator(`li[data-seq="${seq}"]`);
    await historyRow(before).waitFor(WAIT);
    assert.deepEqual(
      await shownPositions(history),
      Array.from({ length: before }, (_, i) => i + 1),
      "the events so far, in order",
    );

    // Reload mid-run: the pages resume from the run's events as the server has them.
    await page.reload();
    await permission.waitFor(WAIT);
    await history.reload();
    await historyRow(before).waitFor(WAIT);
    assert.deepEqual(
      await shownPositions(history),
      Array.from({ length: before }, (_, i) => i + 1),
      "after the reload: the same events, once each",
    );

    // A malformed answer and an answer to a request nobody asked: typed refusals, nothing queued.
    const commandsBefore = admin(["authority", "runs", "--json"]) as { commands: number };
    const malformed = await postFromPage(page, runId, {
      type: "request.resolve",
      payload: { requestId: "request_permission_1", resolution: { action: "maybe" } },
    });
    assert.deepEqual(
      [malformed.status, malformed.body.error?.code, malformed.body.error?.path],
      [400, "invalid_answer", "/payload/resolution/action"],
    );
    const badChoice = await postFromPage(page, runId, {
      type: "request.resolve",
      payload: { requestId: "request_permission_1", resolution: { action: "accept", choice: "always" } },
    });
    assert.deepEqual([badChoice.status, badChoice.body.error?.code], [400, "invalid_answer"]);
    const notAllowed = await postFromPage(page, runId, { type: "runner.shutdown", payload: {} });
    assert.deepEqual(
      [notAllowed.status, notAllowed.body.error?.code, notAllowed.body.error?.path],
      [400, "invalid_request", "/type"],
    );
    assert.deepEqual(admin(["authority", "runs", "--json"]), commandsBefore, "no refused command reached the store");

    // The permission, answered from the form: nothing is chosen for the person.
    const sendPermission = permission.getByRole("button", { name: "Send answer" });
    assert.equal(await sendPermission.isDisabled(), true, "no choice is pre-selected: the answer waits for one");
    await permission.getByLabel("Allow").check();
    await permission.getByRole("button", { name: "Send answer" }).click();
    await page
      .getByTestId("receipt")
      .getByText(/Queued request\.resolve as command_prp_\d+/)
      .waitFor(WAIT);
    // A second answer to the same request: refused by the server, whatever the page shows.
    const second = await postFromPage(page, runId, {
      type: "request.resolve",
      payload: { requestId: "request_permission_1", resolution: { action: "accept", choice: "allow" } },
    });
    assert.deepEqual(
      [second.status, second.body.error?.code, second.body.error?.path],
      [409, "request_already_answered", "/payload/requestId"],
    );

    // The question, answered with text.
    const question = page.locator('form[data-request-id="request_input_1"]');
    await question.waitFor(WAIT);
    await question.getByLabel("Your answer").fill("main");
    await question.getByRole("button", { name: "Send answer" }).click();

    await page
      .getByTestId("terminal")
      .getByText(/completed \/ succeeded/)
      .waitFor(WAIT);
    assert.equal(await runner.exited(), 0, runner.stderr());
    const events = committed(runId);
    assert.deepEqual(judgeRun(events), { runTerminalState: "succeeded", problems: [] });
    const resolved = events.filter((e) => e.eventType === "runtime_request.resolved").map((e) => e.payload);
    assert.equal(resolved.length, 2, "both answers reached the harness");
    assert.match(JSON.stringify(resolved), /main/, "the typed answer is the one the harness got");
    await until(
      async () => (await shownPositions(history)).length === events.length,
      `the event history to show ${events.length} events`,
      30_000,
    );
    assert.deepEqual(
      await shownPositions(history),
      events.map((e) => e.sourceSeq),
      "every committed event once, in order, across the reload",
    );
    // Its events as NDJSON, read by range: one envelope a line, the store's, in order.
    const [download] = await Promise.all([
      history.waitForEvent("download", WAIT),
      history.getByTestId("download-events").click(),
    ]);
    const lines = eventLines(readFileSync(await download.path(), "utf8"));
    assert.deepEqual(
      lines.map((e) => e.sourceSeq),
      events.map((e) => e.sourceSeq),
      "each line a PRP event (the codec checks it)",
    );
    // One event's JSON, copied; its payload opened in place.
    await live.browser.context.grantPermissions(["clipboard-read", "clipboard-write"]);
    const last = historyRow(events.length);
    await last.getByTestId("copy-event").click();
    await history.getByText(`Copied event ${events.length} as JSON.`).waitFor(WAIT);
    assert.equal(
      (JSON.parse((await history.evaluate("navigator.clipboard.readText()")) as string) as { eventType: string })
        .eventType,
      "run.terminal",
    );
    await last.locator(".event-toggle").click();
    assert.match((await last.getByTestId("event-payload").textContent()) ?? "", /"eventType": "run.terminal"/);
    await history.close();
    assert.equal(
      await page.getByTestId("integrity").textContent(),
      "complete; 0 duplicate(s), 0 gap(s), 0 out of order",
    );

    // The list, still never reloaded, shows the run's end.
    await row.getByText("succeeded").waitFor(WAIT);
    assert.equal(await row.locator(".event-count").textContent(), String(events.length));

    // After the run ended: no buttons to press; a command sent anyway is refused typed, nothing queued.
    await page.getByTestId("ended-note").waitFor(WAIT);
    for (const name of ["Interrupt the turn", "Cancel the run"])
      assert.equal(await page.getByRole("button", { name }).count(), 0, `no "${name}" on an ended run`);
    const commandsAtEnd = admin(["authority", "runs", "--json"]);
    const late = await postFromPage(page, runId, { type: "run.cancel", payload: {} });
    assert.deepEqual([late.status, late.body.error?.code], [409, "run_ended"]);
    assert.deepEqual(admin(["authority", "runs", "--json"]), commandsAtEnd);
    await screenshot(page, "run");

    // A run that does not exist: the page says so; the API refuses it typed.
    await page.goto(`${live.console.base}/#/run/run_does_not_exist`);
    await page
      .getByTestId("page-error")
      .getByText(/unknown_run/)
      .waitFor(WAIT);
    const unknown = await postFromPage(page, "run_does_not_exist", { type: "run.cancel", payload: {} });
    assert.deepEqual([unknown.status, unknown.body.error?.code], [404, "unknown_run"]);
    await page.close();
    await list.close();
  });

  it("interrupts a turn from the page: the receipt is shown and the run ends interrupted; its bundle's files open and download with the token", async () => {
    const { runId, runner } = startRun("interrupted");
    mkdirSync(join(live.dir, "bundles", runId, "bundle"), { recursive: true });
    writeFileSync(join(live.dir, "bundles", runId, "bundle", "notes.txt"), "the bundle's own notes\n");
    const page = await live.watched();
    await page.goto(`${live.console.url}#/run/${runId}`);
    await page.getByTestId("conversation").getByText("compiling…").waitFor(WAIT);
    await page.getByRole("button", { name: "Interrupt the turn" }).click();
    await page
      .getByTestId("receipt")
      .getByText(/Queued turn\.interrupt/)
      .waitFor(WAIT);
    await page
      .getByTestId("terminal")
      .getByText(/^interrupted \//)
      .waitFor(WAIT);
    await runner.exited();
    const events = committed(runId);
    assert.deepEqual(judgeRun(events).problems, []);
    assert.ok(
      events.some((e) => e.eventType === "turn.interrupted"),
      events.map((e) => e.eventType).join(", "),
    );

    // A link sends no header: the page fetches the file with the token and opens or saves it.
    const [tab] = await Promise.all([
      live.browser.context.waitForEvent("page", WAIT),
      page.getByRole("link", { name: "notes.txt", exact: true }).click(),
    ]);
    await tab.waitForURL(/^blob:/, WAIT);
    assert.equal(await tab.evaluate<string>("document.body.innerText"), "the bundle's own notes\n");
    await tab.close();
    const [download] = await Promise.all([
      page.waitForEvent("download", WAIT),
      page.getByRole("link", { name: "Download notes.txt" }).click(),
    ]);
    assert.equal(download.suggestedFilename(), "notes.txt");
    assert.equal(readFileSync((await download.path())!, "utf8"), "the bundle's own notes\n");
    await page.close();
  });
});
