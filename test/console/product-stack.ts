import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import type { AuthorityStore } from "../../src/authority/store.js";
import { killAll, startApiDaemon, type Daemon } from "../cli/authority-processes.js";
import { eventLines } from "../cli/authority-run.js";
import { runPrp } from "../cli/run-cli.js";
import {
  addWorker,
  openStoreOf,
  startWorker,
  workerStarts,
  type StoreFlags,
  type WorkerProcess,
} from "../dispatch/support.js";
import { startTestPostgres, type TestPostgres } from "../support/postgres.js";
import { until } from "../support/until.js";
import { launchChromium, type Browser } from "./browser.js";

export type StoreKind = "sqlite" | "postgres";

/** The labels the stack's one worker offers: a run labelled otherwise waits in the queue. */
export const WORKER_LABELS = "os=linux";

/** A run as `prp authority runs --json` reads it from the store. */
export interface StoredRun {
  runId: string;
  state: string;
  waiting: string | null;
  dispatch: {
    state: string;
    attempts: number;
    workerId: string | null;
    endReason: string | null;
    labels: Record<string, string>;
  } | null;
  terminal: boolean;
  commands: number;
  connectionCount: number;
}

/** A command as the store holds it: what the page queued, judged apart from the page. */
export interface StoredCommand {
  type: string;
  status: string | null;
  payload: Record<string, unknown>;
  result: Record<string, unknown> | null;
}

/** What a page did that a page must never do: dialogs opened, scripts that threw. */
export interface PageIncidents {
  dialogs: string[];
  errors: string[];
}

/**
 * The console as a person meets it: `prp authority serve --api … --console …` on a store of
 * `kind`, one `prp worker` with a credential of its own claiming the queue, and a Chromium.
 * PostgreSQL is a fresh database of a server of this test file's own (PRP_TEST_POSTGRES_URL,
 * else embedded). `close` stops every process it started, by its handle or pid.
 */
export async function productStack(kind: StoreKind) {
  const root = mkdtempSync(join(tmpdir(), `prp-e2e-${kind}-`));
  let pg: TestPostgres | undefined;
  let daemon: Daemon | undefined;
  let worker: WorkerProcess | undefined;
  let browser: Browser | undefined;
  let reader: AuthorityStore | undefined;
  const close = async () => {
    await browser?.close();
    await reader?.close();
    // SIGKILL leaves the worker's runners (each leads its own process group): stopped by group.
    const runnerPids = worker ? workerStarts([worker]).filter((s) => s.exitCode === undefined && s.pid !== null) : [];
    await killAll([worker, daemon]);
    for (const { pid } of runnerPids) killGroup(pid!);
    await pg?.stop();
    rmSync(root, { recursive: true, force: true });
  };
  let store: StoreFlags;
  let consoleUrl: string;
  let apiUrl: string;
  try {
    const keyFile = join(root, "secrets", "key");
    const made = runPrp(["authority", "key", "--out", keyFile]);
    if (made.status !== 0) throw new Error(`prp authority key exited ${made.status}: ${made.stderr}`);
    let location = `sqlite:${join(root, "store")}`;
    if (kind === "postgres") {
      pg = await startTestPostgres();
      location = await pg.database();
    }
    store = { flags: ["--store", location, "--server-key-file", keyFile], location, keyFile };
    const urlFile = join(root, "console-url");
    const started = await startApiDaemon([
      ...store.flags,
      "--poll-ms",
      "50",
      "--worker-heartbeat-ms",
      "500",
      "--console",
      "127.0.0.1:0",
      "--console-url-file",
      urlFile,
    ]);
    daemon = started.daemon;
    apiUrl = started.apiUrl;
    await until(
      () => existsSync(urlFile) && readFileSync(urlFile, "utf8").trim() !== "",
      () =>
        `the console's URL in ${urlFile}; daemon stdout: ${daemon!.stdout()} stderr: ${daemon!.stderr().slice(-2000)}`,
      30_000,
    );
    consoleUrl = readFileSync(urlFile, "utf8").trim();
    worker = startWorker({
      apiUrl,
      credential: addWorker(store, "e2e-worker", root),
      dir: join(root, "e2e-worker"),
      name: "e2e-worker",
      labels: WORKER_LABELS,
      maxRuns: 4,
    });
    // The store opened beside the daemon, read-only by use: what the tests poll cheaply.
    reader = await openStoreOf(store);
    browser = await launchChromium();
  } catch (err) {
    await close();
    throw err;
  }
  const w = worker;
  const d = daemon;
  const r = reader;
  const base = new URL(consoleUrl).origin;
  const incidents = new Map<Page, PageIncidents>();

  const storeArgs = store.flags;
  const runs = (): StoredRun[] => {
    const r = runPrp(["authority", "runs", "--json", ...storeArgs]);
    if (r.status !== 0) throw new Error(`prp authority runs exited ${r.status}: ${r.stderr}`);
    return r.stdout
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as StoredRun);
  };

  return {
    kind,
    root,
    store,
    apiUrl,
    base,
    daemon: d,
    worker: w,
    close,
    /** A new page, signed in through the console's URL with its token, on `hash` (e.g. `#/new`). */
    async open(hash = "#/"): Promise<Page> {
      const page = await browser!.context.newPage();
      const seen: PageIncidents = { dialogs: [], errors: [] };
      incidents.set(page, seen);
      page.on("dialog", (dialog) => {
        seen.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
        void dialog.dismiss();
      });
      page.on("pageerror", (err) => seen.errors.push(err.message));
      await page.goto(consoleUrl);
      await page.goto(`${base}/${hash}`);
      return page;
    },
    /** What `page` did that it must not: each dialog it opened and each uncaught error. */
    incidents: (page: Page): PageIncidents => incidents.get(page) ?? { dialogs: [], errors: [] },
    /** Every run, from the store (`prp authority runs --json`). */
    runs,
    /** One run from the store; the test fails naming the runs there are if it is missing. */
    run(runId: string): StoredRun {
      const all = runs();
      const found = all.find((r) => r.runId === runId);
      if (!found) throw new Error(`the store holds no run ${runId} (it holds ${all.map((r) => r.runId).join(", ")})`);
      return found;
    },
    /** The run's committed events, as `prp events --json` reads them from the store. */
    events(runId: string) {
      const r = runPrp(["events", "--run", runId, "--json", ...storeArgs]);
      if (r.status !== 0) throw new Error(`prp events --run ${runId} exited ${r.status}: ${r.stderr}`);
      return eventLines(r.stdout);
    },
    /** Whether the store holds the run's terminal (polled: read beside the daemon, no process spawned). */
    ended: async (runId: string): Promise<boolean> => ((await r.run(runId))?.terminalSourceSeq ?? null) !== null,
    /** The run's commands as the store holds them, read beside the daemon. */
    commands: async (runId: string): Promise<StoredCommand[]> =>
      (await r.commands(runId)).map((c) => ({
        type: c.type,
        status: c.status,
        payload: JSON.parse(c.payload) as Record<string, unknown>,
        result: c.result === null ? null : (JSON.parse(c.result) as Record<string, unknown>),
      })),
    /** The runners the worker started for `runId`, from its own record. */
    startedFor: (runId: string) => workerStarts([w]).filter((s) => s.runId === runId),
    /** The last of the worker's and the daemon's stderr: what a failure message should show. */
    logs: () => `worker stderr: ${w.stderr().slice(-1500)}\ndaemon stderr: ${d.stderr().slice(-1500)}`,
  };
}

export type ProductStack = Awaited<ReturnType<typeof productStack>>;

/** SIGKILL to a process group by its leader's pid (a runner and its agent), if it is still there. */
function killGroup(pid: number): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}
