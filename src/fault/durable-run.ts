import { join, resolve } from "node:path";
import { AuthorityServer } from "../authority/server.js";
import type { ServerKey } from "../authority/server-key.js";
import { ensureServerKeyFile } from "../authority/server-key-source.js";
import type { RunSnapshot } from "../authority/store.js";
import type { PrpEvent } from "../contract/kinds.js";
import type { LoadedScript } from "../harness/script-file.js";
import type { SupervisedProcess, ExitFact } from "../harness/supervisor.js";
import { credentialRunnerdArgs, spawnRunner } from "../runner/spawn.js";
import { newIdSuffix } from "../contract/id-suffix.js";
import { identityWithSuffix } from "../authority/identity.js";
import { runnerBuild } from "../runner/runner-build.js";
import { runnerContractFrom, type RunnerContractFlags } from "../authority/runner-contract.js";
import { AuthorityFaults } from "./authority-faults.js";
import { runSurvivors } from "./run-processes.js";
import { faultyRunnerd } from "./runner-crash.js";

/** Something a fault does to a run once the authority has committed a given number of events. */
export interface FaultStep {
  afterEvents: number;
  /** And not before an event that matches this one is committed. */
  afterEvent?: (event: PrpEvent) => boolean;
  act(ctx: FaultContext): Promise<void>;
}

export interface FaultContext {
  authority: AuthorityServer;
  /** What the authority does only under a fault: a lost ACK, a command sent twice or malformed. */
  authorityFaults: AuthorityFaults;
  runId: string;
  /** The live runner process (replaced by `restartRunner`). */
  runner(): SupervisedProcess;
  /** SIGKILLs the runner and starts a new one on the same state with a fresh ticket. */
  restartRunner(): Promise<void>;
  /** The events the authority has committed so far. */
  committed(): PrpEvent[];
  /** The run's directory (absolute), where its runners work. */
  dir: string;
  /** Queues the run's turn.start, for a run whose agent turn is held back (`agent.holdTurn`). */
  startTurn(): Promise<void>;
  /** Moves the authority's clock forward (ticket and lease expiry). */
  advanceAuthorityClock(ms: number): void;
  note(text: string): void;
}

export interface DurableRunOptions {
  /** The fake harness script the runner plays … */
  script?: LoadedScript;
  /**
   * … or an ACP agent: its prp-runnerd flags and the turn's prompt. With `holdTurn` the turn is
   * queued only when a fault calls `startTurn` (a fault between the session and the turn).
   */
  agent?: { runnerdArgs: string[]; prompt: string; holdTurn?: boolean };
  /** Another prp-runnerd entry to run (another build or image); by default this package's. */
  runnerd?: string;
  /** The authority's runner-contract policy; by default `equal` to this package's contract. */
  runnerContract?: RunnerContractFlags;
  delayMs?: number;
  /** The demo's folder: authority/ and runner-state/ go under <dir>/<runId>/. */
  dir: string;
  faults?: FaultStep[];
  /** The authority's server key (the caller's to destroy); by default one generated beside the run's state. */
  serverKey?: ServerKey;
  /** Extra prp-runnerd flags. */
  runnerArgs?: string[];
  /**
   * The run's protocol version: the run is registered for it and the runner started with
   * --protocol-max. Default 1: a demo's bundle and a fault's judge read v1 event streams (wire.md O10).
   */
  protocolVersion?: number;
  /**
   * Where the first runner kills itself (`after-commit:N`, `after-journal:N`; runner-crash.ts); a
   * replacement is then started. That runner is the fault entry (faulty-runnerd.ts), not `runnerd`.
   */
  crashAt?: string;
  /**
   * How long each bootstrap ticket is good for. Default 30 s, not the authority's 5 s: the ticket
   * is issued before the runner process is spawned, and a loaded machine can take longer than 5 s
   * to start Node (measured: credential_expired at 7 s under a load average of 20).
   */
  ticketTtlMs?: number;
  /** Relaunch a runner that exits 3 (its lease expired), as a controller does, with a new ticket. */
  relaunchAfterLeaseExpiry?: boolean;
  /**
   * Read the store this often for commands and revocations other processes queued in it (a
   * console, prp authority command), as prp authority serve does; without it only this
   * process's own commands are delivered.
   */
  pollStoreMs?: number;
  onCommitted?: (event: PrpEvent) => void;
  /** Called once the run is registered in the authority's store (<dir>/<runId>/authority), before its runner starts. */
  onRegistered?: (run: { runId: string; dir: string }) => Promise<void>;
  note?: (text: string) => void;
  /**
   * Opt in to credential observation (run.prepare observeCredentials: true) and give the runner
   * this credential file; with a script, by default <dir>/<runId>/credentials/auth.json (what
   * the fake harness's credentials steps write).
   */
  credentials?: { file?: string; provider?: string };
  /** The host's onCredentialsUpdated (awaited in the event's commit, before the ACK), with the run's fault context. */
  onCredentialsUpdated?: (event: PrpEvent, ctx: FaultContext) => Promise<void> | void;
  /** Relaunch, once, a first runner that something other than `crashAt` killed with SIGKILL. */
  relaunchAfterSigkill?: boolean;
}

export interface DurableRunFacts {
  runId: string;
  dir: string;
  /**
   * Every event the host's `onCommittedEvent` received, in order, repeats included (a callback
   * whose commit then failed is called again on redelivery): the record a fault run is judged by.
   */
  events: PrpEvent[];
  run: RunSnapshot | undefined;
  runnerExits: ExitFact[];
  /** Where the first runner was told to kill itself (`after-commit:N`, `after-journal:N`), if anywhere. */
  crashAt?: string;
  /** Every runner process's pid, in start order. */
  runnerPids: number[];
  /**
   * The run's processes still alive after its last runner was ended (and a bounded wait for the
   * orphan guards to act), read from /proc: "pid argv" each. None may survive its run.
   */
  survivors: string[];
  /** Runner stderr tails, one per runner process, for reports and secret scans. */
  runnerLogs: string[][];
  tickets: string[];
  /** The fault steps planned, and those whose point the run never reached: they never acted. */
  faultSteps: { planned: number; notReached: number };
}

/**
 * One durable run on this machine: an authority on 127.0.0.1 with SQLite state, a bootstrap
 * ticket, the three opening commands, and prp-runnerd dialling in with the ticket in its
 * environment. Faults act between commits. Returns when the run's terminal is committed and
 * the runner has exited (or when the runner gave up).
 */
export async function runDurable(options: DurableRunOptions): Promise<DurableRunFacts> {
  const identity = identityWithSuffix(newIdSuffix());
  // Absolute: the runners work in this directory (their processes are found by it), so the paths they are given must not be relative to it.
  const dir = resolve(options.dir, identity.runId);
  const build = runnerBuild();
  const facts: DurableRunFacts = {
    runId: identity.runId,
    dir,
    events: [],
    run: undefined,
    runnerExits: [],
    runnerPids: [],
    survivors: [],
    runnerLogs: [],
    tickets: [],
    faultSteps: { planned: options.faults?.length ?? 0, notReached: 0 },
    ...(options.crashAt ? { crashAt: options.crashAt } : {}),
  };
  const note = options.note ?? (() => {});
  const pendingFaults = [...(options.faults ?? [])];
  const matched = new Set<FaultStep>(); // the steps whose afterEvent was committed
  let chain: Promise<void> = Promise.resolve();
  let resolveTerminal!: () => void;
  const terminalCommitted = new Promise<void>((r) => (resolveTerminal = r));
  let clockOffset = 0;
  // Beside the authority's state, not in it: its database alone opens no credential.
  const ownKey = options.serverKey ? null : ensureServerKeyFile(join(dir, "authority-server-key"));
  const serverKey = options.serverKey ?? ownKey!;
  const authorityFaults = new AuthorityFaults(() => authority.commands);
  const authority = AuthorityServer.open({
    hooks: authorityFaults,
    now: () => Date.now() + clockOffset,
    stateDir: join(dir, "authority"),
    serverKey,
    runnerVersion: build.version,
    runnerDigest: build.digest,
    runnerContract: runnerContractFrom(options.runnerContract ?? { runnerContract: "equal" }, build.contractDigest),
    onCommittedEvent: (event) => {
      facts.events.push(event);
      options.onCommitted?.(event);
      if (event.eventType === "run.terminal") resolveTerminal();
      for (const step of pendingFaults) if (step.afterEvent?.(event)) matched.add(step);
      while (
        pendingFaults.length > 0 &&
        facts.events.length >= pendingFaults[0]!.afterEvents &&
        (!pendingFaults[0]!.afterEvent || matched.has(pendingFaults[0]!))
      ) {
        const step = pendingFaults.shift()!;
        chain = chain.then(() => step.act(ctx)); // faults run outside the commit, in order
      }
    },
    log: (text) => note(`authority: ${text}`),
    ...(options.onCredentialsUpdated
      ? { onCredentialsUpdated: (event: PrpEvent) => options.onCredentialsUpdated!(event, ctx) }
      : {}),
  });
  let runner: SupervisedProcess | null = null;
  let runnersStarted = 0;
  const startRunner = async () => {
    runnersStarted++;
    const ticket = await authority.issueBootstrapTicket(identity.runId, options.ticketTtlMs ?? 30_000);
    if (!ticket.ok) throw new Error(`${ticket.error.code}: ${ticket.error.message}`);
    facts.tickets.push(ticket.value.token);
    runner = spawnRunner({
      connectUrl: authority.connectUrl(identity.runId),
      ticket: ticket.value.token,
      stateDir: join(dir, "runner-state"),
      identity,
      ...(options.script ? { script: resolve(options.script.path) } : { harnessArgs: options.agent!.runnerdArgs }),
      ...(options.delayMs !== undefined ? { delayMs: options.delayMs } : {}),
      protocolMax: options.protocolVersion ?? 1,
      extraArgs: [
        ...(options.runnerArgs ?? []),
        ...(options.credentials
          ? credentialRunnerdArgs(
              options.credentials.file ?? (options.script ? join(dir, "credentials", "auth.json") : undefined),
              options.credentials.provider,
            )
          : []),
      ],
      // The run's folder holds the authority's store and key: never in the harness's view.
      sandboxHide: [dir],
      cwd: dir,
      // Only the first runner crashes, and only the fault entry knows how (faulty-runnerd.ts).
      ...(options.crashAt && runnersStarted === 1
        ? { runnerd: faultyRunnerd(), env: { PRP_RUNNER_CRASH_AT: options.crashAt } }
        : options.runnerd
          ? { runnerd: options.runnerd }
          : {}),
    }).process;
    facts.runnerPids.push(runner.pid);
  };
  const finishRunner = async (r: SupervisedProcess) => {
    facts.runnerExits.push(await r.terminate());
    facts.runnerLogs.push(r.log.snapshot().lines);
  };
  async function queueTurn(): Promise<void> {
    const text = options.agent ? options.agent.prompt : `Play the ${options.script!.script.name} script.`;
    await authority.queueCommand(identity.runId, "turn.start", { text, turnId: identity.turnId });
  }
  const ctx: FaultContext = {
    authority,
    authorityFaults,
    runId: identity.runId,
    runner: () => runner!,
    restartRunner: async () => {
      const old = runner!;
      old.pause();
      await finishRunnerKilled(old);
      await startRunner();
    },
    committed: () => facts.events,
    startTurn: queueTurn,
    dir,
    advanceAuthorityClock: (ms) => {
      clockOffset += ms;
    },
    note,
  };
  const finishRunnerKilled = async (r: SupervisedProcess) => {
    process.kill(-r.pid, "SIGKILL");
    await finishRunner(r);
  };
  const poller =
    options.pollStoreMs === undefined
      ? undefined
      : authority.pollStore(options.pollStoreMs, (err) =>
          note(`authority: reading the store for commands queued elsewhere failed: ${err.message}`),
        );
  try {
    await authority.listen(0);
    const registered = await authority.registerRun(identity, { protocolVersion: options.protocolVersion ?? 1 });
    if (!registered.ok) throw new Error(`${registered.error.code}: ${registered.error.message}`);
    await options.onRegistered?.({ runId: identity.runId, dir });
    await authority.queueCommand(identity.runId, "run.prepare", {
      workspace: "demo",
      ...(options.credentials ? { observeCredentials: true } : {}),
    });
    await authority.queueCommand(identity.runId, "session.open", { reuse: "new_per_run" });
    if (!options.agent?.holdTurn) await queueTurn();
    await startRunner();
    // The run ends when its terminal is committed and the current runner has exited.
    for (;;) {
      const current: SupervisedProcess = runner!;
      const exit = await current.exited;
      await chain;
      if (runner !== current) continue; // replaced by a fault while we waited
      const crashed =
        exit.signal === "SIGKILL" && (options.crashAt !== undefined || options.relaunchAfterSigkill === true);
      const expired = exit.exitCode === 3 && options.relaunchAfterLeaseExpiry === true;
      if ((crashed || expired) && runnersStarted === 1) {
        note(
          crashed
            ? `the runner was killed (${options.crashAt ?? "SIGKILL"}); starting a new one on the same state`
            : "the runner's lease expired; relaunching it with a new ticket on the same state",
        );
        await finishRunner(current);
        await startRunner();
        continue;
      }
      break;
    }
    await Promise.race([terminalCommitted, new Promise((r) => setTimeout(r, 200))]);
    facts.run = await authority.run(identity.runId);
    facts.faultSteps.notReached = pendingFaults.length;
    return facts;
  } finally {
    if (runner) await finishRunner(runner);
    await poller?.stop();
    await authority.close();
    const groups = facts.events
      .filter((e) => e.eventType === "harness.ready")
      .map((e) => (e.payload as { pid?: number }).pid)
      .filter((pid): pid is number => typeof pid === "number");
    facts.survivors = await runSurvivors({ dir, runnerPids: facts.runnerPids, groups });
    ownKey?.destroy();
  }
}
