import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { agentsDir as defaultAgentsDir } from "../agents/agents-dir.js";
import { CATALOG_ENV } from "../agents/catalog.js";
import { ApiServer, type ApiServerHandle } from "../api/server.js";
import { newWorkerCredential } from "../api/worker-credentials.js";
import { DEFAULT_DISPATCH } from "../api/dispatch-sweeper.js";
import { runnerContractFrom, type RunnerContractFlags } from "../authority/runner-contract.js";
import { AuthorityServer } from "../authority/server.js";
import type { ServerKey } from "../authority/server-key.js";
import { ensureServerKeyFile } from "../authority/server-key-source.js";
import type { AuthorityStore } from "../authority/store.js";
import { PrpClient } from "../client/index.js";
import type { ConsoleServer } from "../console/server.js";
import { StoreSource } from "../console/store-source.js";
import { runnerBuild } from "../runner/runner-build.js";
import { PollLoop } from "../worker/poll-loop.js";
import { claimStarter, type RunnerExit } from "../worker/start-claim.js";
import { WorkerRecord } from "../worker/worker-record.js";
import { openCliStore, refusal, storeLocation } from "./authority-options.js";
import { DEFAULT_CONSOLE_LISTEN, publishConsoleUrl, startConsole } from "./console-serve.js";
import { installedAgents } from "./local-stack-agents.js";

export interface LocalStackOptions {
  /** The stack's folder (made 0700): authority/ (the SQLite store), authority-server-key, console-url. */
  dir: string;
  /** The store's key (the caller's to destroy); by default <dir>/authority-server-key, made 600 once. */
  serverKey?: ServerKey;
  /** The worker's folder: state/<run>, workspaces/<run>, started.jsonl (default <dir>/worker). */
  workerDir?: string;
  /** Runs the worker runs at once (default 4). */
  maxRuns?: number;
  /** The named agents it advertises (default: those installed in agentsDir, not probed). */
  agents?: string[];
  /** Where named agents are installed (default: PRP_AGENTS_DIR, else ~/.cache/prp-kit/agents). */
  agentsDir?: string;
  /** Further paths no harness may see (the stack hides its store, key and console URL itself). */
  hide?: string[];
  /** Further prp-runnerd flags for every run (--harness-ready-ms, --sandbox …, --delay-ms). */
  runnerArgs?: string[];
  /** Another prp-runnerd entry. */
  runnerd?: string;
  runnerContract?: RunnerContractFlags;
  /** The console serves DIR/<runId>/bundle/ as a run's bundle (prp demo's layout). */
  bundlesDir?: string;
  /** How often the authority reads the store for what other processes queued (default 200 ms). */
  pollMs?: number;
  consoleListen?: { host: string; port: number };
  /** Told after each commit, with the run it went to. */
  committed?: (runId: string) => void;
  /** Progress lines of the worker and notes of the authority, for a person. */
  log?: (line: string) => void;
}

export interface LocalStack {
  /** The console's URL with its access token (?token=…): open it, or call its /v1 with the token. */
  consoleUrl: string;
  consoleToken: string;
  /** The HTTP API v1 the worker polls (its runs' tickets name the runner URL). */
  apiUrl: string;
  runnerUrl: string;
  /** Where the console's URL is written (mode 600); removed by close(). */
  urlFile: string;
  store: AuthorityStore;
  workerId: string;
  /** How the runner of `runId` exited, once it has (undefined: this worker never started one). */
  runnerExit(runId: string): Promise<RunnerExit> | undefined;
  /** Stops the worker (its runners cancel their runs, bounded), then the console, API, authority and store. */
  close(): Promise<void>;
}

/** How long close() lets runners deliver their cancelled terminal before killing them. */
const STOP_GRACE_MS = 15_000;

/**
 * A whole control plane on 127.0.0.1 in this process, for one person: the authority on a SQLite
 * store with its runner listener, the HTTP API v1 with the run queue, the console on the same
 * store, and a worker that claims queued runs through the API and runs each one's prp-runnerd.
 * The worker's credential is minted into the store and kept in memory only; the store, the key
 * and the console's URL file are hidden from every harness.
 */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const dir = resolve(options.dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const log = options.log ?? (() => {});
  const pollMs = options.pollMs ?? 200;
  const keyFile = join(dir, "authority-server-key");
  const urlFile = join(dir, "console-url");
  const storeDir = join(dir, "authority");
  const location = storeLocation({ store: `sqlite:${storeDir}` });
  // What was started, undone in reverse on a failure or at close.
  const undo: Array<() => Promise<void> | void> = [];
  const unwind = async () => {
    for (const step of undo.splice(0).reverse()) await step();
  };
  try {
    const ownKey = options.serverKey ? null : ensureServerKeyFile(keyFile);
    if (ownKey) undo.push(() => ownKey.destroy());
    const store = await openCliStore(location, { serverKey: options.serverKey ?? ownKey!, create: true, log });
    undo.push(() => store.close());

    // Set once each listens; a commit before that wakes nobody there.
    const followers: { api?: ApiServerHandle; console?: ConsoleServer } = {};
    const build = runnerBuild();
    const authority = AuthorityServer.open({
      store,
      runnerVersion: build.version,
      runnerDigest: build.digest,
      runnerContract: runnerContractFrom(options.runnerContract ?? { runnerContract: "equal" }, build.contractDigest),
      // After each commit: the API's and the console's followers read what is already committed.
      afterCommit: (runIds: ReadonlySet<string>) =>
        runIds.forEach((runId) => {
          followers.api?.committed(runId);
          followers.console?.committed(runId);
          options.committed?.(runId);
        }),
      log: (message) => log(`authority: ${message}`),
    });
    undo.push(() => authority.close());
    const runnerUrl = await authority.listen(0, "127.0.0.1");
    const poller = authority.pollStore(pollMs, (err) => log(`authority: reading the store failed: ${err.message}`));
    undo.push(() => poller.stop());

    const api = await ApiServer.start({
      store,
      host: "127.0.0.1",
      port: 0,
      runnerConnectUrl: runnerUrl,
      commandQueued: (runId) => authority.commandQueued(runId),
      onError: (err) => log(`api: ${err.message}`),
    });
    undo.push(() => api.close());
    followers.api = api;

    const consoleServer = await startConsole(
      new StoreSource(store, async () => {}),
      options.consoleListen ?? DEFAULT_CONSOLE_LISTEN,
      {
        pollMs,
        print: () => {},
        commandQueued: (runId) => authority.commandQueued(runId),
        ...(options.bundlesDir ? { bundlesDir: resolve(options.bundlesDir) } : {}),
      },
    );
    undo.push(() => consoleServer.close());
    followers.console = consoleServer;
    publishConsoleUrl(urlFile, consoleServer.url);
    undo.push(() => rmSync(urlFile, { force: true }));

    const worker = await startWorker(options, store, api.url, [storeDir, keyFile, urlFile], log);
    undo.push(() => worker.stop());
    const { token, url } = consoleServer;
    return {
      consoleUrl: url,
      consoleToken: token,
      apiUrl: api.url,
      runnerUrl,
      urlFile,
      store,
      workerId: worker.workerId,
      runnerExit: (runId) => worker.exits.get(runId),
      close: unwind,
    };
  } catch (err) {
    await unwind();
    throw err;
  }
}

/** The stack's worker: a credential of its own in the store, and prp worker's loop on the API. */
async function startWorker(
  options: LocalStackOptions,
  store: AuthorityStore,
  apiUrl: string,
  secrets: string[],
  log: (line: string) => void,
): Promise<{ workerId: string; exits: Map<string, Promise<RunnerExit>>; stop(): Promise<void> }> {
  const made = newWorkerCredential(`local-${Date.now()}`, Date.now());
  const inserted = await store.insertWorker(made.row);
  if (!inserted.ok) throw refusal(inserted.error);
  const { workerId } = made.row;
  const dir = resolve(options.workerDir ?? join(options.dir, "worker"));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const agentsFolder = defaultAgentsDir(options.agentsDir);
  const agents = options.agents ?? installedAgents(agentsFolder);
  const client = new PrpClient({ baseUrl: apiUrl, token: made.credential });
  const start = claimStarter({
    dir,
    record: new WorkerRecord(dir),
    hide: [...secrets, ...(options.hide ?? []).map((p) => resolve(p))],
    agentsDir: agentsFolder,
    ...(process.env[CATALOG_ENV] ? { agentCatalog: resolve(process.env[CATALOG_ENV]) } : {}),
    ...(options.runnerArgs ? { extraArgs: options.runnerArgs } : {}),
    ...(options.runnerd ? { runnerd: resolve(options.runnerd) } : {}),
  });
  const exits = new Map<string, Promise<RunnerExit>>();
  const loop = new PollLoop({
    labels: {},
    agents,
    maxRuns: options.maxRuns ?? 4,
    poll: (body, signal) => client.pollWorker(body, { signal }),
    start: async (claim) => {
      const runner = await start(claim);
      exits.set(claim.runId, runner.exited);
      return runner;
    },
    log: (line) => log(`worker: ${line}`),
  });
  log(`worker: ${workerId} advertises ${agents.length > 0 ? `agents ${agents.join(",")}` : "no named agent"}`);
  const running = loop.run();
  return {
    workerId,
    exits,
    stop: async () => {
      // Its runners cancel their runs and deliver the cancelled terminal while the authority still listens.
      loop.stop("SIGTERM");
      const killer = setTimeout(() => loop.kill(), STOP_GRACE_MS);
      try {
        await running;
      } finally {
        clearTimeout(killer);
      }
      // Its credential ends with it: a copy of it opens nothing afterwards.
      await store.revokeWorker(workerId, Date.now(), DEFAULT_DISPATCH.maxAttempts);
    },
  };
}
