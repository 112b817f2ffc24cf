import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { packageRoot } from "../../src/contract/package-root.js";
import { withPatientHarness } from "../support/scripts.js";
import { until } from "../support/until.js";
import { runPrp } from "./run-cli.js";

/** A child process the test started, with its output so far and a bounded wait for its exit. */
export interface Child {
  pid: number;
  stdout(): string;
  stderr(): string;
  /** Its exit code (or 128 + signal), waited for at most `timeoutMs`; fails the test past it. */
  exited(timeoutMs?: number): Promise<number>;
  /** Sends `signal` by pid if it is still running. */
  kill(signal: NodeJS.Signals): void;
}

function track(child: ChildProcess, what: string): Child {
  let out = "";
  let err = "";
  let code: number | null = null;
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number>((resolve) =>
    child.once("exit", (c, s) => resolve((code = c ?? 128 + (s === "SIGKILL" ? 9 : s === "SIGTERM" ? 15 : 2)))),
  );
  return {
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    exited: async (timeoutMs = 60_000) => {
      await until(
        () => code !== null,
        () => `${what} (pid ${child.pid}) to exit; stderr: ${err.slice(-2000)}`,
        timeoutMs,
      );
      return exit;
    },
    kill: (signal) => {
      if (code === null) process.kill(child.pid!, signal);
    },
  };
}

/**
 * `prp …` as a child process (for a daemon, or a command that runs while the test goes on); one
 * that starts a runner gets the patient harness deadline unless `args` set one.
 */
export function spawnPrp(args: string[], env: NodeJS.ProcessEnv = {}): Child {
  const child = spawn(process.execPath, [join(packageRoot(), "bin/prp.js"), ...withPatientHarness(args)], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return track(child, `prp ${args.slice(0, 2).join(" ")}`);
}

/** `prp-runnerd …` with the ticket in its environment only, and the patient harness deadline unless `args` set one. */
export function spawnRunnerd(args: string[], ticket: string, cwd: string): Child {
  const child = spawn(
    process.execPath,
    [join(packageRoot(), "bin/prp-runnerd.js"), ...withPatientHarness(args, "prp-runnerd")],
    {
      cwd,
      env: { PATH: process.env.PATH, PAPERCLIP_RUNNER_BOOTSTRAP_TICKET: ticket },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  return track(child, "prp-runnerd");
}

/** A started `prp authority serve`: its pid, the URL it printed, its JSON log lines. */
export interface Daemon extends Child {
  url: string;
  /** Each stderr line parsed; a line that is not a JSON object fails the test. */
  log(): Array<Record<string, unknown>>;
}

export async function startDaemon(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Daemon> {
  const child = spawnPrp(["authority", "serve", ...args], env);
  await until(
    () => child.stdout().includes("\n") || child.stderr().includes("prp: "),
    () => `the daemon to print its URL; stderr: ${child.stderr()}`,
    30_000,
  );
  const url = child.stdout().split("\n")[0]!;
  if (!/^wss?:\/\//.test(url)) {
    child.kill("SIGKILL");
    throw new Error(`the daemon did not start: ${child.stderr()}`);
  }
  return {
    ...child,
    url,
    log: () =>
      child
        .stderr()
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => {
          const parsed = JSON.parse(l) as unknown;
          if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
            throw new Error(`a log line is not a JSON object: ${l}`);
          return parsed as Record<string, unknown>;
        }),
  };
}

/** `prp authority serve --api 127.0.0.1:0` with `args`: the daemon, once it has printed its API's URL too. */
export async function startApiDaemon(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ daemon: Daemon; apiUrl: string }> {
  const daemon = await startDaemon([...args, "--api", "127.0.0.1:0"], env);
  try {
    await until(
      () => /\napi: \S+\n/.test(daemon.stdout()),
      () => `the api URL; stderr: ${daemon.stderr()}`,
    );
  } catch (err) {
    daemon.kill("SIGKILL");
    throw err;
  }
  return { daemon, apiUrl: /\napi: (\S+)\n/.exec(daemon.stdout())![1]! };
}

/** The prp-runnerd flags of the identity `prp authority run create --json` printed, against `url`. */
export function runnerArgs(created: { runnerArgs: string[] }, url: string, stateDir: string): string[] {
  return created.runnerArgs.map((a) => a.replace("<authority-url>", url).replace("<state-dir>", stateDir));
}

/**
 * A fresh folder holding a server key made by `prp authority key` (under secrets/) and the
 * flags every `prp authority …` command takes for a SQLite store beside it.
 */
export function authorityFolder(prefix: string): { dir: string; key: string; store: string[] } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const key = join(dir, "secrets", "authority-key");
  const made = runPrp(["authority", "key", "--out", key]);
  if (made.status !== 0) throw new Error(`prp authority key exited ${made.status}: ${made.stderr}`);
  return { dir, key, store: ["--store", `sqlite:${join(dir, "store")}`, "--server-key-file", key] };
}

/** Kills each child by its handle and waits for its exit. */
export async function killAll(children: ReadonlyArray<Child | undefined>): Promise<void> {
  for (const child of children) {
    if (!child) continue;
    child.kill("SIGKILL");
    await child.exited();
  }
}
