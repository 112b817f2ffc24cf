import { existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { openAuthorityStore, parseStoreLocation } from "../../src/authority/open-store.js";
import { readServerKeyFile } from "../../src/authority/server-key-source.js";
import type { AuthorityStore, DispatchRow, LoggedEvent } from "../../src/authority/store.js";
import { spawnPrp, startApiDaemon, startDaemon, type Child, type Daemon } from "../cli/authority-processes.js";
import { freePort } from "../support/free-port.js";
import { until } from "../support/until.js";
import { runPrp } from "../cli/run-cli.js";
import { parseWorkerRecord, type RunnerStart } from "./judges.js";

/** The store flags every `prp authority …` command of one test takes, and the key file they name. */
export interface StoreFlags {
  flags: string[];
  location: string;
  keyFile: string;
}

/** `prp authority serve --api` on `store`. */
export async function startAuthority(
  store: StoreFlags,
  extra: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<{ daemon: Daemon; apiUrl: string }> {
  return startApiDaemon([...store.flags, "--poll-ms", "50", ...extra], env);
}

/** An authority on fixed ports, so that a killed one comes back where its workers and runners dial. */
export interface FixedAuthority {
  ports: { runner: number; api: number };
  apiUrl: string;
  daemon: Daemon;
  /** Starts it again on the same ports (after a kill). */
  restart(): Promise<void>;
}

export async function startFixedAuthority(store: StoreFlags, extra: string[] = []): Promise<FixedAuthority> {
  const ports = { runner: await freePort(), api: await freePort() };
  const start = async () => {
    const daemon = await startDaemon([
      ...store.flags,
      "--poll-ms",
      "50",
      "--listen",
      `127.0.0.1:${ports.runner}`,
      "--api",
      `127.0.0.1:${ports.api}`,
      ...extra,
    ]);
    await until(
      () => /\napi: \S+\n/.test(daemon.stdout()),
      () => `the api URL; stderr: ${daemon.stderr()}`,
    );
    return daemon;
  };
  const fixed: FixedAuthority = {
    ports,
    apiUrl: `http://127.0.0.1:${ports.api}`,
    daemon: await start(),
    restart: async () => {
      fixed.daemon = await start();
    },
  };
  return fixed;
}

/** `prp authority <args> <store>` run to its end: its stdout, or the test fails with its stderr. */
export function admin(store: StoreFlags, args: string[]): string {
  const r = runPrp(["authority", ...args, ...store.flags]);
  if (r.status !== 0) throw new Error(`prp authority ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** A worker credential in a file of its own (`prp authority worker add NAME --out FILE`). */
export function addWorker(store: StoreFlags, name: string, dir: string): string {
  const file = join(dir, `${name}.credential`);
  admin(store, ["worker", "add", name, "--out", file]);
  return file;
}

/** An API token of `scope` in a file of its own. */
export function addToken(store: StoreFlags, scope: "read" | "operate" | "admin", dir: string): string {
  const file = join(dir, `token-${scope}-${Math.random().toString(36).slice(2)}`);
  admin(store, ["token", "create", "--scope", scope, "--out", file]);
  return file;
}

export interface WorkerProcess extends Child {
  dir: string;
  name: string;
}

/** `prp worker` against `apiUrl`, in `dir` (its record and its runners' state). */
export function startWorker(
  options: { apiUrl: string; credential: string; dir: string; name: string; labels: string; maxRuns: number },
  extra: string[] = [],
  env: NodeJS.ProcessEnv = {},
): WorkerProcess {
  mkdirSync(options.dir, { recursive: true });
  const child = spawnPrp(
    [
      "worker",
      "--api",
      options.apiUrl,
      "--token-file",
      options.credential,
      "--labels",
      options.labels,
      "--max-runs",
      String(options.maxRuns),
      "--dir",
      options.dir,
      ...extra,
    ],
    env,
  );
  return { ...child, dir: options.dir, name: options.name };
}

/** What every worker recorded of the runners it started. */
export function workerStarts(workers: ReadonlyArray<{ dir: string; name: string }>): RunnerStart[] {
  return workers.flatMap((w) => {
    const file = join(w.dir, "started.jsonl");
    return existsSync(file) ? parseWorkerRecord(w.name, readFileSync(file, "utf8")) : [];
  });
}

/** The pids of runners a worker started that may still run (no exit recorded): the test stops them. */
export function unfinishedRunnerPids(workers: ReadonlyArray<{ dir: string; name: string }>): number[] {
  return workerStarts(workers)
    .filter((s) => s.exitCode === undefined && s.pid !== null)
    .map((s) => s.pid!);
}

/** Opens the test's store apart from the daemons: what the authority really stored. */
export async function openStoreOf(store: StoreFlags): Promise<AuthorityStore> {
  return openAuthorityStore(parseStoreLocation(store.location), { serverKey: readServerKeyFile(store.keyFile) });
}

/** Every run's whole log and its dispatch row, read from the store. */
export async function storedRecords(
  store: AuthorityStore,
  runIds: readonly string[],
): Promise<{ logs: Map<string, LoggedEvent[]>; dispatch: Map<string, DispatchRow> }> {
  const logs = new Map<string, LoggedEvent[]>();
  for (const runId of runIds) logs.set(runId, await store.eventLog(runId, 0, 100_000));
  const dispatch = new Map((await store.dispatch(runIds)).map((d) => [d.runId, d]));
  return { logs, dispatch };
}

/** Kills by pid every process in `pids` that still runs (orphaned runners of a killed worker). */
export function killPids(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/** The folders a worker made for its runners: one per run it started. */
export const runnerStateDirs = (dir: string): string[] =>
  existsSync(join(dir, "state")) ? readdirSync(join(dir, "state")) : [];
