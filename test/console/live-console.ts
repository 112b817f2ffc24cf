import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import {
  authorityFolder,
  killAll,
  runnerArgs,
  spawnRunnerd,
  startDaemon,
  type Child,
  type Daemon,
} from "../cli/authority-processes.js";
import { withStore } from "../../src/cli/authority-options.js";
import { eventLines } from "../cli/authority-run.js";
import { adminJson, runPrp } from "../cli/run-cli.js";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";
import { launchChromium, type Browser } from "./browser.js";
import { startConsole, type ConsoleProcess } from "./console-process.js";

/** Bounded waits in the page: generous, because two cores are shared with other suites. */
export const WAIT = { timeout: 60_000 };

/**
 * A daemon and `prp console` over one fresh SQLite store, and a Chromium: what the console's
 * live browser tests drive. `close` stops every process it (or startRun) started.
 */
export async function liveConsole(prefix: string) {
  const { dir, key, store } = authorityFolder(prefix);
  const started: Child[] = [];
  let daemon: Daemon | undefined;
  let consoleProcess: ConsoleProcess | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    await killAll([...started, consoleProcess, daemon]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    daemon = await startDaemon([...store, "--poll-ms", "50"]);
    consoleProcess = await startConsole([
      "console",
      ...store,
      "--poll-ms",
      "50",
      "--bundles-dir",
      join(dir, "bundles"),
    ]);
    browser = await launchChromium();
  } catch (err) {
    await close();
    throw err;
  }
  const d = daemon;
  const admin = (args: string[]) => adminJson(store, args);
  /** What the page's CSP refused, on every page opened with `watched`: the built page must need nothing it forbids. */
  const cspViolations: string[] = [];
  const watched = async () => {
    const page = await browser!.context.newPage();
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(`${page.url()}: ${message.text()}`);
    });
    return page;
  };
  return {
    dir,
    store,
    daemon: d,
    console: consoleProcess,
    browser,
    close,
    admin,
    cspViolations,
    /** A new page whose CSP violations are collected. */
    watched,
    /** A new page on the run's page, opened through the URL with the token (the page's way in). */
    async openRun(runId: string) {
      const page = await watched();
      await page.goto(consoleProcess!.url);
      await page.goto(`${consoleProcess!.base}/#/run/${runId}`);
      return page;
    },
    /** How many commands the store holds for the run (`prp authority runs --json`: a line a run). */
    commandCount(runId: string): number {
      const lines = runPrp(["authority", "runs", "--json", ...store])
        .stdout.split("\n")
        .filter((l) => l !== "");
      const rows = lines.map((l) => JSON.parse(l) as { runId: string; commands: number });
      const row = rows.find((r) => r.runId === runId);
      if (!row) throw new Error(`prp authority runs lists no run ${runId}`);
      return row.commands;
    },
    /** The run's commands as the authority's store holds them (read beside the daemon, as the admin commands read it). */
    storedCommands: (runId: string) =>
      withStore({ store: `sqlite:${join(dir, "store")}`, serverKeyFile: key }, async (s) =>
        (await s.commands(runId)).map((c) => ({
          commandId: c.commandId,
          type: c.type,
          status: c.status,
          deliveries: c.deliveryCount,
          payload: JSON.parse(c.payload) as Record<string, unknown>,
        })),
      ),
    /** The run's committed events, as `prp events --json` reads them from the store. */
    committed: (runId: string) => eventLines(runPrp(["events", "--run", runId, "--json", ...store]).stdout),
    /** A run of `script` (a name or a file) created in the store and its runner started against the daemon, with `runnerExtra` flags. */
    startRun(script: string, runnerExtra: string[] = []) {
      return start(["--script", script], runnerExtra);
    },
    /** A run of a named agent, looked for in `agentsDir`. */
    startNamedRun(name: string, agentsDir: string) {
      return start(["--agent", name], ["--agents-dir", agentsDir]);
    },
    /**
     * A run of the ACP test agent playing `scenario`, in a workspace of its own; its requests are
     * put to the page. With `prompt` null, no turn.start is queued: the page starts the turn.
     */
    startAgentRun(scenario: string, prompt: string | null = "Play the scenario.") {
      const workspace = join(dir, `workspace-${scenario}-${started.length}`);
      mkdirSync(workspace);
      return start(
        ["--agent-command", testAgentCommand(scenario)],
        ["--agent-cwd", workspace, "--permission-policy", "ask"],
        prompt,
      );
    },
  };

  function start(harness: string[], runnerExtra: string[], prompt: string | null = "Play the scenario.") {
    const created = admin([
      "authority",
      "run",
      "create",
      "--json",
      ...harness,
      ...(prompt === null ? [] : ["--prompt", prompt]),
    ]) as {
      runId: string;
      identity: { turnId: string };
      runnerArgs: string[];
    };
    const ticket = admin(["authority", "ticket", created.runId, "--json"]) as { ticket: string };
    const runner = spawnRunnerd(
      [
        ...runnerArgs(created, d.url, join(dir, `runner-${created.runId}`)),
        "--delay-ms",
        "0",
        ...PATIENT_HARNESS,
        ...runnerExtra,
      ],
      ticket.ticket,
      dir,
    );
    started.push(runner);
    return { runId: created.runId, runner };
  }
}

export type LiveConsole = Awaited<ReturnType<typeof liveConsole>>;

/** The seqs of the events the run's events tab has in the page (a window of them), in page order. */
export const shownPositions = (page: Page) =>
  page
    .getByTestId("events-list")
    .locator("li[data-seq]")
    .evaluateAll((rows) => rows.map((r) => Number(r.getAttribute("data-seq"))));

/** The events tab's list scrolled to its end, waited for: it follows the newest events from there. */
export const eventsAtBottom = (page: Page) =>
  until(
    async () =>
      (await page
        .getByTestId("events-list")
        .evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight)
        .catch(() => Infinity)) <= 8,
    "the events list to be scrolled to its newest row",
    WAIT.timeout,
  );

/** The header the page sends with every API call (its token, from its sessionStorage), as node:test may pass it into the page. */
export const pageAuthHeaders = async (page: Page): Promise<Record<string, string>> => {
  const token = (await page.evaluate('sessionStorage.getItem("prp-console-token")')) as string | null;
  if (token === null) throw new Error("the page holds no access token");
  return { authorization: `Bearer ${token}` };
};

/**
 * A POST of a command from the page itself (its token, its origin): what a tampered page could
 * send. The API's refusal (`{code, path?, message}`) is the body's `error`.
 */
export const postFromPage = (page: Page, runId: string, body: unknown) =>
  page.evaluate(
    async ([id, text]) => {
      const { sessionStorage } = globalThis as unknown as { sessionStorage: { getItem(key: string): string | null } };
      const authorization = `Bearer ${sessionStorage.getItem("prp-console-token")}`;
      const res = await fetch(`v1/runs/${encodeURIComponent(id!)}/commands`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization },
        body: text!,
      });
      const json = (await res.json()) as { code: string; path: string; message: string };
      return { status: res.status, body: res.ok ? {} : { error: json } };
    },
    [runId, JSON.stringify(body)],
  );
