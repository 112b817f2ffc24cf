import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { authorityFolder, killAll, runnerArgs, spawnRunnerd, startDaemon, type Child, type Daemon } from "../cli/authority-processes.js";
import { eventLines, judgeRun } from "../cli/authority-run.js";
import { adminJson, runPrp } from "../cli/run-cli.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";
import { launchChromium, type Browser } from "./browser.js";
import { startConsole, type ConsoleProcess } from "./console-process.js";

/** Bounded waits in the page: generous, because two cores are shared with other suites. */
const WAIT = { timeout: 60_000 };

describe("prp console in Chromium: a live run watched, answered and interrupted from the page", () => {
  let dir: string;
  let store: string[];
  let daemon: Daemon;
  let consoleProcess: ConsoleProcess;
  let browser: Browser;
  const runners: Child[] = [];
  /** What the page's CSP refused, from every page: the built page must need nothing it forbids. */
  const cspViolations: string[] = [];
  const watched = async () => {
    const page = await browser.context.newPage();
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(`${page.url()}: ${message.text()}`);
    });
    return page;
  };

  before(async () => {
    ({ dir, store } = authorityFolder("prp-console-"));
    daemon = await startDaemon([...store, "--poll-ms", "50"]);
    consoleProcess = await startConsole(["console", ...store, "--poll-ms", "50", "--bundles-dir", join(dir, "bundles")]);
    browser = await launchChromium();
  });
  after(async () => {
    assert.deepEqual(cspViolations, [], "the console's page ran under its CSP without a violation");
    await browser?.close();
    await killAll([...runners, consoleProcess, daemon]);
    rmSync(dir, { recursive: true, force: true });
  });

  const admin = (args: string[]) => adminJson(store, args);
  const committed = (runId: string) => eventLines(runPrp(["events", "--run", runId, "--json", ...store]).stdout);
  /** A run of `script` created in the store and its runner started against the daemon. */
  const startRun = (script: string) => {
    const created = admin(["authority", "run", "create", "--json", "--script", script, "--prompt", `Play the ${script} script.`]) as { runId: string; identity: { turnId: string }; runnerArgs: string[] };
    const ticket = admin(["authority", "ticket", created.runId, "--json"]) as { ticket: string };
    const runner = spawnRunnerd([...runnerArgs(created, daemon.url, join(dir, `runner-${created.runId}`)), "--delay-ms", "0", ...PATIENT_HARNESS], ticket.ticket, dir);
    runners.push(runner);
    return { runId: created.runId, runner };
  };
  /** The positions the run page's timeline shows, in page order. */
  const shownPositions = (page: Page) => page.locator(".timeline li").evaluateAll((rows) => rows.map((r) => Number(r.getAttribute("data-position"))));
  /** A POST of a command from the page itself (its token, its origin): what a tampered page could send. */
  const postFromPage = (page: Page, runId: string, body: unknown) =>
    page.evaluate(
      async ([id, text]) => {
        const { sessionStorage } = globalThis as unknown as { sessionStorage: { getItem(key: string): string | null } };
        const authorization = `Bearer ${sessionStorage.getItem("prp-console-token")}`;
        const res = await fetch(`api/runs/${encodeURIComponent(id!)}/commands`, { method: "POST", headers: { "content-type": "application/json", authorization }, body: text! });
        return { status: res.status, body: (await res.json()) as { error?: { code: string; path: string; message: string } } };
      },
      [runId, JSON.stringify(body)],
    );

  it("the API refuses a request without the token in its header (401); the page takes the token from its URL into this tab, and no cookie", async () => {
    for (const path of ["/api/runs", "/api/runs/stream", `/api/runs?token=${consoleProcess.token}`]) {
      const res = await fetch(`${consoleProcess.base}${path}`, { headers: { cookie: `prp_console_token=${consoleProcess.token}` } });
      assert.equal(res.status, 401, `${path} without the token in Authorization`);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, "token_missing");
    }
    assert.equal((await fetch(`${consoleProcess.base}/`)).status, 200, "the page's files hold no data: served to anyone");
    const page = await watched();
    await page.goto(`${consoleProcess.base}/`);
    await page.getByTestId("token-missing").getByText(/open the URL that the console printed/).waitFor(WAIT);
    await page.goto(`${consoleProcess.base}/?token=${"f".repeat(64)}`);
    const wrong = await postFromPage(page, "any", {});
    assert.deepEqual([wrong.status, wrong.body.error?.code], [401, "token_wrong"]);
    const served = await page.goto(consoleProcess.url);
    assert.equal(served?.status(), 200);
    await page.getByText(/No runs yet|Runs \(/).waitFor(WAIT);
    assert.equal(new URL(page.url()).search, "", "the token leaves the address bar");
    assert.equal(await page.evaluate('sessionStorage.getItem("prp-console-token")'), consoleProcess.token);
    assert.deepEqual(await browser.context.cookies(), [], "no cookie at all");
    await page.close();
  });

  it("another server on 127.0.0.1, in the same browser, gets no token; it cannot frame the console", async () => {
    const console_ = await watched();
    await console_.goto(consoleProcess.url);
    await console_.getByText(/No runs yet|Runs \(/).waitFor(WAIT);
    // A plain server on another loopback port: it records what the browser sends it, and frames the console.
    const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
    const other: Server = createServer((req, res) => {
      seen.push({ url: req.url ?? "", headers: req.headers });
      if (req.url === "/") {
        res.writeHead(200, { "content-type": "text/html" });
        return void res.end(`<img src="/pixel"><script>fetch("/probe", { credentials: "include" }).then(() => (window.probed = true));</script>
          <iframe id="console" src="${consoleProcess.url}" onload="window.framed = true"></iframe>`);
      }
      res.writeHead(204).end();
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const page = await browser.context.newPage();
      await page.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
      await page.waitForFunction("window.probed && window.framed", undefined, WAIT);
      assert.ok(seen.some((r) => r.url === "/probe") && seen.some((r) => r.url === "/pixel"), JSON.stringify(seen.map((r) => r.url)));
      for (const request of seen) {
        assert.equal(request.headers.cookie, undefined, `no cookie on ${request.url}`);
        assert.ok(!JSON.stringify(request).includes(consoleProcess.token), `no token in ${request.url}`);
      }
      // The framed console is refused (frame-ancestors 'none', X-Frame-Options): an error page, not the console.
      const frame = page.frames().find((f) => f !== page.mainFrame());
      assert.ok(frame, "the iframe is there");
      const shown = await frame.evaluate<string>('document.body?.innerText ?? ""').catch((err: Error) => `inaccessible: ${err.message}`);
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
    const list = await watched();
    await list.goto(consoleProcess.url);
    await list.getByText(/No runs yet|Runs \(/).waitFor(WAIT);

    const { runId, runner } = startRun("permission-input");
    // The list page is never reloaded: the row appears, live, while the run waits for its answer.
    const row = list.locator(`tr[data-run-id="${runId}"]`);
    await row.waitFor(WAIT);
    await row.getByText("live").waitFor(WAIT);

    const page = await watched();
    await page.goto(`${consoleProcess.url}#/run/${runId}`);
    const permission = page.locator('form[data-request-id="request_permission_1"]');
    await permission.waitFor(WAIT);
    const before = committed(runId).length;
    assert.deepEqual(await shownPositions(page), Array.from({ length: before }, (_, i) => i + 1), "the timeline so far, in order");

    // Reload mid-run: the page resumes from the last position it saw.
    await page.reload();
    await permission.waitFor(WAIT);
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

    // The permission, answered from the form.
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

    // A command after the run ended: a message on the page, a typed refusal, nothing queued.
    const commandsAtEnd = admin(["authority", "runs", "--json"]);
    await page.getByRole("button", { name: "Cancel the run" }).click();
    await page.getByTestId("refusal").getByText(/run_ended/).waitFor(WAIT);
    assert.deepEqual(admin(["authority", "runs", "--json"]), commandsAtEnd);
    if (process.env.PRP_CONSOLE_SCREENSHOT) await page.screenshot({ path: process.env.PRP_CONSOLE_SCREENSHOT, fullPage: true });

    // A run that does not exist: the page says so; the API refuses it typed.
    await page.goto(`${consoleProcess.base}/#/run/run_does_not_exist`);
    await page.getByTestId("page-error").getByText(/unknown_run/).waitFor(WAIT);
    const unknown = await postFromPage(page, "run_does_not_exist", { type: "run.cancel", payload: {} });
    assert.deepEqual([unknown.status, unknown.body.error?.code], [404, "unknown_run"]);
    await page.close();
    await list.close();
  });

  it("interrupts a turn from the page: the receipt is shown and the run ends interrupted; its bundle's files open and download with the token", async () => {
    const { runId, runner } = startRun("interrupted");
    mkdirSync(join(dir, "bundles", runId, "bundle"), { recursive: true });
    writeFileSync(join(dir, "bundles", runId, "bundle", "notes.txt"), "the bundle's own notes\n");
    const page = await watched();
    await page.goto(`${consoleProcess.url}#/run/${runId}`);
    await page.locator(".items").getByText("compiling…").waitFor(WAIT);
    await page.getByRole("button", { name: "Interrupt the turn" }).click();
    await page.getByTestId("receipt").getByText(/Queued turn\.interrupt/).waitFor(WAIT);
    await page.getByTestId("terminal").getByText(/^interrupted \//).waitFor(WAIT);
    await runner.exited();
    const events = committed(runId);
    assert.deepEqual(judgeRun(events).problems, []);
    assert.ok(events.some((e) => e.eventType === "turn.interrupted"), events.map((e) => e.eventType).join(", "));

    // A link sends no header: the page fetches the file with the token and opens or saves it.
    const [tab] = await Promise.all([browser.context.waitForEvent("page", WAIT), page.getByRole("link", { name: "notes.txt", exact: true }).click()]);
    await tab.waitForURL(/^blob:/, WAIT);
    assert.equal(await tab.evaluate<string>("document.body.innerText"), "the bundle's own notes\n");
    await tab.close();
    const [download] = await Promise.all([page.waitForEvent("download", WAIT), page.getByRole("link", { name: "Download notes.txt" }).click()]);
    assert.equal(download.suggestedFilename(), "notes.txt");
    assert.equal(readFileSync((await download.path())!, "utf8"), "the bundle's own notes\n");
    await page.close();
  });
});
