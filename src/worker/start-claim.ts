import { chmodSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { WorkerClaim } from "../client/index.js";
import { signalGroup } from "../harness/process-groups.js";
import { spawnRunner, type RunnerHandle, type SpawnRunnerOptions } from "../runner/spawn.js";
import type { WorkerRecord } from "./worker-record.js";

/** How a runner ended, and the last lines it wrote to stderr. */
export interface RunnerExit {
  exitCode: number | null;
  signal: string | null;
  stderrTail: string[];
}

/** A runner the worker started for a claim: what the poll loop needs of it. */
export interface WorkerRunner {
  readonly pid: number;
  /** Resolves once the runner has exited (and its exit is in the record). */
  readonly exited: Promise<RunnerExit>;
  /** SIGKILL to its group: its run was taken back, or is released unstarted; nothing may be delivered. */
  kill(): void;
  /** SIGTERM to its group: the runner cancels its run and delivers the cancelled terminal. */
  stop(): void;
}

export type StartClaim = (claim: WorkerClaim) => Promise<WorkerRunner>;

export interface ClaimStarterOptions {
  /** The worker's folder (absolute): state/<runId>, workspaces/<runId>, started.jsonl. */
  dir: string;
  record: WorkerRecord;
  /** Passed to each runner whose connect URL is wss:// (prp-runnerd refuses it with ws://). */
  caBundlePath?: string;
  /** Further prp-runnerd flags for every runner (tests: a patient harness deadline). */
  extraArgs?: string[];
  /**
   * Paths no harness may see besides the worker's own (its runners' state and its record): the
   * worker credential. An agent's home is visible to it, and the worker's folder may be there.
   */
  hide?: string[];
  /** Where a named agent's runner looks for its install (the worker's --agents-dir). */
  agentsDir?: string;
  /** The worker's own agent catalog (PRP_AGENT_CATALOG): its runners resolve names as it advertised them. */
  agentCatalog?: string;
  /** Another prp-runnerd entry. */
  runnerd?: string;
  /** Variables for every runner: the worker's OTEL_* ones (tracing-config.ts otelVariables), so its runners trace as it asks. */
  runnerEnv?: Record<string, string>;
  /** How a runner is spawned; spawnRunner by default (tests inject a fake). */
  spawn?: (options: SpawnRunnerOptions) => RunnerHandle;
}

const isAcp = (claim: WorkerClaim): boolean =>
  claim.spec.agent.kind !== "fake" ||
  claim.harnessArgs.some((a, i) => a === "acp" && claim.harnessArgs[i - 1] === "--harness");

/**
 * Starts the runner of a claim: its private state folder (0700), a workspace of its own for an
 * agent, a `starting` line fsynced before the spawn and a `started` line with its pid after, the
 * ticket through its stdin pipe only (never argv, environment or a file). The runner leads its
 * own process group (superviseRunnerd): a Ctrl-C at the worker's terminal does not reach it. It
 * outlives the worker: a killed worker's runners finish their runs under their own leases, and
 * the authority never starts a started run again.
 */
export function claimStarter(options: ClaimStarterOptions): StartClaim {
  const spawn = options.spawn ?? spawnRunner;
  return async (claim) => {
    const { runId } = claim;
    const stateDir = join(options.dir, "state", runId);
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    chmodSync(stateDir, 0o700); // a folder left by an earlier attempt keeps whatever mode it had
    const harnessArgs = [...claim.harnessArgs];
    if (isAcp(claim)) {
      const workspace = join(options.dir, "workspaces", runId);
      mkdirSync(workspace, { recursive: true, mode: 0o700 });
      harnessArgs.push("--agent-cwd", workspace);
    }
    if (claim.spec.agent.kind === "profile") {
      if (options.agentsDir) harnessArgs.push("--agents-dir", options.agentsDir);
      if (options.agentCatalog) harnessArgs.push("--agent-catalog", options.agentCatalog);
    }
    // A run created by a traced request: its runner's spans join that trace (docs/deployment.md "Traces").
    const env = { ...options.runnerEnv, ...(claim.traceParent ? { TRACEPARENT: claim.traceParent } : {}) };
    const startedAt = new Date().toISOString();
    options.record.append({ kind: "starting", runId, attempt: claim.attempt, startedAt });
    const handle = spawn({
      connectUrl: claim.connectUrl,
      ticket: claim.ticket,
      ticketVia: "stdin",
      outlivesCaller: true,
      stateDir,
      identity: claim.identity,
      harnessArgs,
      protocolMax: claim.protocolMax,
      extraArgs: [
        ...(options.caBundlePath && claim.connectUrl.startsWith("wss://")
          ? ["--ca-bundle-path", options.caBundlePath]
          : []),
        ...(options.extraArgs ?? []),
        // Every run's state (its lease), the record and the credential: a hostile agent with
        // them could speak for another run or claim runs itself.
        ...[join(options.dir, "state"), options.record.path, ...(options.hide ?? [])].flatMap((p) => [
          "--sandbox-hide",
          p,
        ]),
      ],
      cwd: options.dir,
      ...(Object.keys(env).length > 0 ? { env } : {}),
      ...(options.runnerd ? { runnerd: options.runnerd } : {}),
    });
    options.record.append({ kind: "started", runId, attempt: claim.attempt, pid: handle.pid, startedAt });
    const exited = handle.exited.then(async (fact) => {
      // Reaps what the runner left in its group, and forgets the group: its id may be reused.
      await handle.stop();
      options.record.append({
        kind: "exited",
        runId,
        exitCode: fact.exitCode,
        signal: fact.signal,
        exitedAt: new Date().toISOString(),
      });
      return { exitCode: fact.exitCode, signal: fact.signal, stderrTail: handle.stderrTail() };
    });
    return {
      pid: handle.pid,
      exited,
      kill: () => void signalGroup(handle.pid, "SIGKILL"),
      stop: () => void signalGroup(handle.pid, "SIGTERM"),
    };
  };
}
