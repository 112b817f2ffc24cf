import { join } from "node:path";
import { packageRoot } from "../contract/package-root.js";
import { SupervisedProcess, type ExitFact } from "../harness/supervisor.js";
import type { RunIdentity } from "../transport/envelope.js";

/** This package's `prp-runnerd` entry, or another build's (tests, a pinned runner). */
export const runnerdEntry = (runnerd?: string): string => runnerd ?? join(packageRoot(), "bin/prp-runnerd.js");

export interface RunnerdProcessOptions {
  /** prp-runnerd's flags. */
  args: string[];
  /** Another prp-runnerd entry to run; by default this package's. */
  runnerd?: string;
  /** Variables for the runner besides PATH and HOME. */
  env?: Record<string, string>;
  cwd?: string;
  maxLineBytes?: number;
  onLine?: (line: string) => void;
  onOversize?: (bytes: number) => void;
  /** Written to the runner's stdin, which is then closed (the ticket, with --ticket-stdin). */
  stdinText?: string;
  /** The runner goes on if the caller dies (a worker's runners: each finishes its run under its own lease). */
  outlivesCaller?: boolean;
}

/**
 * `prp-runnerd` under the supervisor, in its own process group: a Ctrl-C at a terminal reaches
 * only the caller, which decides what it means, and no runner outlives the caller unless asked.
 */
export function superviseRunnerd(options: RunnerdProcessOptions): SupervisedProcess {
  const child = new SupervisedProcess({
    command: process.execPath,
    args: [runnerdEntry(options.runnerd), ...options.args],
    // HOME goes on to the harness: an agent keeps its login and caches there.
    env: { ...(process.env.HOME ? { HOME: process.env.HOME } : {}), ...options.env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.maxLineBytes ? { maxLineBytes: options.maxLineBytes } : {}),
    // The runner needs its own grace to end its harness group before it is ended itself.
    graceMs: 2_000,
    ...(options.outlivesCaller ? { outlivesOwner: true } : {}),
    onLine: options.onLine ?? (() => {}),
    onOversize: options.onOversize ?? (() => {}),
  });
  if (options.stdinText !== undefined) {
    child.writeLine(options.stdinText);
    child.closeStdin(); // prp-runnerd --ticket-stdin reads up to EOF
  }
  return child;
}

export interface SpawnRunnerOptions {
  /** The authority's URL for this run (AuthorityServer.connectUrl). */
  connectUrl: string;
  /** The one-use bootstrap ticket (AuthorityServer.issueBootstrapTicket); never in argv. */
  ticket: string;
  /**
   * How the ticket reaches the runner: `env` (PAPERCLIP_RUNNER_BOOTSTRAP_TICKET, the default) or
   * `stdin` (--ticket-stdin: written to its stdin pipe, which is then closed), which leaves no
   * trace in /proc/<pid>/environ for the runner's lifetime.
   */
  ticketVia?: "env" | "stdin";
  /** The runner goes on if the caller dies (RunnerdProcessOptions.outlivesCaller). */
  outlivesCaller?: boolean;
  /** The runner's private state (outbox, command journal); a replacement runner reuses it. */
  stateDir: string;
  identity: RunIdentity;
  /** The fake harness's script: a scenario name, or a file (absolute, or relative to `cwd`); or give `harnessArgs` for another harness. */
  script?: string;
  /** prp-runnerd flags choosing the harness instead of `script` (e.g. --harness acp --agent-command ...). */
  harnessArgs?: string[];
  delayMs?: number;
  /** The highest PRP version offered in the hello (prp-runnerd's default when absent). */
  protocolMax?: number;
  /** Paths the harness must never see (the authority's store and key, when they are near). */
  sandboxHide?: string[];
  /** Any further prp-runnerd flags. */
  extraArgs?: string[];
  /** Variables for the runner besides PATH, HOME and the ticket. */
  env?: Record<string, string>;
  cwd?: string;
  runnerd?: string;
}

/** The prp-runnerd flags for an observed credential file. */
export const credentialRunnerdArgs = (file: string | undefined, provider: string | undefined): string[] => [
  ...(file ? ["--credential-file", file] : []),
  ...(provider ? ["--credential-provider", provider] : []),
];

/** prp-runnerd's durable-mode flags for `options` (the ticket is not among them). */
export function durableRunnerArgs(
  options: Omit<SpawnRunnerOptions, "ticket" | "ticketVia" | "outlivesCaller" | "env" | "cwd" | "runnerd">,
): string[] {
  const { identity } = options;
  return [
    "--connect-url",
    options.connectUrl,
    "--state-dir",
    options.stateDir,
    "--run-id",
    identity.runId,
    "--session-id",
    identity.normalizedSessionId,
    "--runner-id",
    identity.runnerInstanceId,
    "--environment-lease-id",
    identity.environmentLeaseId,
    "--turn-id",
    identity.turnId,
    "--item-id",
    identity.itemId,
    ...(options.script ? ["--script", options.script] : (options.harnessArgs ?? [])),
    ...(options.delayMs !== undefined ? ["--delay-ms", String(options.delayMs)] : []),
    ...(options.protocolMax !== undefined ? ["--protocol-max", String(options.protocolMax)] : []),
    ...(options.extraArgs ?? []),
    ...(options.sandboxHide ?? []).flatMap((path) => ["--sandbox-hide", path]),
  ];
}

/** A runner started by spawnRunner. */
export interface RunnerHandle {
  readonly pid: number;
  /** Resolves when the runner has exited: 0 once its terminal was acknowledged (see prp-runnerd --help for the rest). */
  readonly exited: Promise<ExitFact>;
  /** The runner's stderr tail, for a report when something went wrong. */
  stderrTail(): string[];
  /** Ends the runner's group (SIGTERM, then SIGKILL after a grace): the run is cancelled. */
  stop(): Promise<ExitFact>;
  /** The supervised process itself, for callers that pause or signal it. */
  readonly process: SupervisedProcess;
}

/**
 * Starts a durable runner (`prp-runnerd --connect-url`) for one run: it dials the authority with
 * the ticket, plays the harness, and exits once its terminal is acknowledged. The runner is a
 * child process on purpose: it owns the harness's process group, and its exit statuses and
 * signal handling are those of prp-runnerd. To run a runner in this process, see startRunner.
 */
export function spawnRunner(options: SpawnRunnerOptions): RunnerHandle {
  const viaStdin = options.ticketVia === "stdin";
  const child = superviseRunnerd({
    args: [...durableRunnerArgs(options), ...(viaStdin ? ["--ticket-stdin"] : [])],
    env: viaStdin ? { ...options.env } : { ...options.env, PAPERCLIP_RUNNER_BOOTSTRAP_TICKET: options.ticket },
    ...(viaStdin ? { stdinText: options.ticket } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.runnerd ? { runnerd: options.runnerd } : {}),
    ...(options.outlivesCaller ? { outlivesCaller: true } : {}),
  });
  return {
    pid: child.pid,
    exited: child.exited,
    stderrTail: () => child.log.snapshot().lines,
    stop: () => child.terminate(),
    process: child,
  };
}
