import type { AdmissionCounts } from "../transport/admission.js";
import { isLoopback } from "../transport/loopback.js";
import {
  createRunnerUpgradeServer,
  IDENTITY_PATTERN,
  RUNNER_CONNECT_PATH_PREFIX,
  type RunIdentity,
  type RunnerUpgradeServer,
  type TransportError,
} from "../transport/index.js";
import { CommandQueue } from "./commands.js";
import { Credentials, type IssuedTicket } from "./credentials.js";
import type { Result } from "./errors.js";
import { EventIngest, type OnCommittedEvent } from "./ingest.js";
import { withCredentialsCallback } from "./credentials-updated.js";
import { registerRun } from "./runs.js";
import { runnerContractCheck } from "./runner-contract.js";
import { RunnerConnections } from "./runner-connections.js";
import { ServerLog } from "./server-log.js";
import type { AuthorityServerOptions } from "./server-options.js";
import { heartbeatIntervalSetting } from "./heartbeat-setting.js";
import { storeFailure, storeFailureKind } from "./store-failure.js";
import { SqliteAuthorityStore } from "./sqlite-store.js";
import type { AuthorityStore, Diagnostic, RunSnapshot } from "./store.js";

/**
 * The control-plane authority as a server (runtime.md §6): takes runner upgrades on
 * 127.0.0.1, authenticates them against its tickets and leases, keeps one live connection per
 * run, ingests events in order and acknowledges them after the caller's commit, and delivers
 * the command queue one command at a time. Each connection is pinged every heartbeat interval
 * and closed when its runner falls silent; its lease is renewed when the runner asks.
 */
export class AuthorityServer {
  private upgrade: RunnerUpgradeServer | null = null;
  private baseUrl = "";
  private closed = false;
  private readonly unsubscribe: () => void;
  private readonly log: ServerLog;
  private readonly connections: RunnerConnections;

  private constructor(
    private readonly options: AuthorityServerOptions,
    private readonly store: AuthorityStore,
    /** Whether `close` closes the store: only one the server opened itself. */
    private readonly ownsStore: boolean,
    readonly credentials: Credentials,
    readonly commands: CommandQueue,
    ingest: EventIngest,
  ) {
    this.log = new ServerLog(options.log);
    this.connections = new RunnerConnections({
      settings: options,
      store,
      credentials,
      commands,
      ingest,
      log: this.log,
      contractCheck: options.runnerContract ? runnerContractCheck(options.runnerContract) : undefined,
    });
    // What another instance on the same database did reaches this one's live runner.
    this.unsubscribe = store.subscribe((notice) => {
      if (notice.kind === "revoked") this.connections.sendRevoke(notice.runId, notice.revocationEpoch);
      else
        for (const runId of notice.kind === "missed" ? this.connections.liveRunIds() : [notice.runId])
          this.offerNext(runId);
    });
  }

  /**
   * A command was queued in the store by something beside this server in the same process (the
   * HTTP API): its run's live runner, if connected here, is offered it now rather than at the
   * next poll. A failure leaves it queued for the next offer or reconnect.
   */
  commandQueued(runId: string): void {
    this.offerNext(runId);
  }

  /** Delivers a command queued through another instance; a failure leaves it queued for the next offer or reconnect. */
  private offerNext(runId: string): void {
    this.connections
      .deliverNext(runId)
      .catch((err: unknown) =>
        this.log.line(`run ${runId}: delivering a command queued elsewhere failed: ${String(err)}`),
      );
  }

  /**
   * Serves `options.store`, or opens the SQLite store under `stateDir`; throws StateError on a
   * store it must refuse, Error on a bad option.
   */
  static open(options: AuthorityServerOptions): AuthorityServer {
    const heartbeat = heartbeatIntervalSetting(options.heartbeatIntervalMs);
    if (!heartbeat.ok) throw new Error(`${heartbeat.error.code}: ${heartbeat.error.message}`);
    const ownsStore = !("store" in options);
    const store =
      "store" in options
        ? options.store
        : SqliteAuthorityStore.open(options.stateDir, {
            serverKey: options.serverKey,
            adoptServerKey: options.adoptServerKey === true,
          });
    const clock = options.now ? { now: options.now } : {};
    const credentials = Credentials.create({
      store,
      ...clock,
      ...(options.leaseTtlMs ? { leaseTtlMs: options.leaseTtlMs } : {}),
      ...(options.renewalWindowMs !== undefined ? { renewalWindowMs: options.renewalWindowMs } : {}),
    });
    if (!credentials.ok) {
      if (ownsStore) void store.close();
      throw new Error(`${credentials.error.code}: ${credentials.error.message}`);
    }
    return new AuthorityServer(
      options,
      store,
      ownsStore,
      credentials.value,
      new CommandQueue({ store, ...clock }),
      new EventIngest({
        store,
        ...clock,
        ...onCommitted(withCredentialsCallback(options.onCommittedEvent, options.onCredentialsUpdated)),
        ...(options.afterCommit ? { afterCommit: options.afterCommit } : {}),
        ...(options.observer ? { observer: options.observer } : {}),
      }),
    );
  }

  /** `protocolVersion`: the highest version the run's runner may negotiate (default 3; see expectedRange, runner-connections.ts). */
  registerRun(identity: RunIdentity, options: { protocolVersion?: number } = {}): Promise<Result<RunSnapshot>> {
    return registerRun(this.store, identity, options);
  }

  issueBootstrapTicket(runId: string, ttlMs?: number): Promise<Result<IssuedTicket>> {
    return this.credentials.issueBootstrapTicket(runId, ttlMs);
  }

  /** Queues a command and, when its run has a live connection idle for commands, delivers it. */
  async queueCommand(runId: string, type: string, payload: Record<string, unknown>, id?: string) {
    const queued = await this.commands.queueCommand(runId, type, payload, id);
    if (queued.ok) await this.connections.deliverNext(runId);
    return queued;
  }

  run(runId: string): Promise<RunSnapshot | undefined> {
    return this.store.run(runId);
  }

  /**
   * The run's recorded diagnostics, oldest first; read-only. The newest 32 are kept, and apart
   * from them the first and the latest refusal of each code before authentication.
   */
  diagnostics(runId: string): Promise<Diagnostic[]> {
    return this.store.diagnostics(runId);
  }

  /** How many times each code refused a connection to the run before authentication. */
  authFailures(runId: string): Promise<Record<string, number>> {
    return this.store.authFailures(runId);
  }

  /** The server's unauthenticated sockets now, and those it refused at a cap or its deadline. */
  admission(): AdmissionCounts {
    return this.upgrade?.admission() ?? { unauthenticated: 0, refused: 0, timedOut: 0 };
  }

  /**
   * Listens (port 0: any free port) and returns the base URL: ws:// on a loopback host, or
   * wss:// on any host when the `tls` option is set (runtime.md §5.1: a runner dials ws:// only
   * to loopback, so a plaintext listener anywhere else would serve nobody but an eavesdropper).
   */
  async listen(port = 0, host = "127.0.0.1"): Promise<string> {
    if (!this.options.tls && !isLoopback(host))
      throw new Error(`ws:// is loopback-only: listening on ${host} needs TLS (a certificate and key)`);
    const { headersTimeoutMs, ...admission } = this.options.connections ?? {};
    let overCap = 0;
    this.upgrade = createRunnerUpgradeServer({
      onRunner: (ws, runId, authenticated) =>
        void this.connections.accept(ws, runId, authenticated).catch((err: unknown) => {
          // The store failed while admitting: the runner redials, with its credential unused or its lease intact.
          const failure = storeFailure(err);
          this.options.observer?.storeFailed(storeFailureKind(err));
          this.log.line(`run ${runId}: admission failed: ${failure.code}: ${failure.message}`);
          ws.resume(); // held while the run was read: it must read the runner's close to end
          ws.close(1011, failure.code);
        }),
      onRefused: (error, req) => void this.refusedUpgrade(error, req.url ?? ""),
      onOverCap: (status, address) => {
        overCap++;
        // At each power of two: a flood shows in the log without flooding it.
        if ((overCap & (overCap - 1)) === 0)
          this.log.line(
            `refused ${overCap} connection(s) at the admission caps; the latest from ${address}: ${status}`,
          );
      },
      ...(headersTimeoutMs !== undefined ? { headersTimeoutMs } : {}),
      admission,
      ...(this.options.tls ? { tls: this.options.tls } : {}),
    });
    const address = await this.upgrade.listen(port, host);
    this.baseUrl = `${this.options.tls ? "wss" : "ws"}://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
    return this.baseUrl;
  }

  /** Whether the runner listener is up: listen() returned and close() has not begun. */
  listening(): boolean {
    return this.baseUrl !== "" && !this.closed;
  }

  connectUrl(runId: string): string {
    return `${this.baseUrl}${RUNNER_CONNECT_PATH_PREFIX}${runId}`;
  }

  /** Drops a run's live connection (fault injection, or an operator's disconnect). */
  disconnectRunner(runId: string): void {
    this.connections.disconnect(runId);
  }

  /**
   * Revokes the run's credentials with a higher epoch and tells the live runner, which flushes
   * its outbox on this connection and stops (runtime.md §5.9).
   */
  async revoke(runId: string): Promise<boolean> {
    const revoked = await this.credentials.revoke(runId);
    if (!revoked.ok) return false;
    return this.connections.sendRevoke(runId, revoked.value.revocationEpoch);
  }

  /**
   * Acts on what another process changed in the store (an admin command queued a command or
   * revoked a run): each live run gets its next command if it is idle for one, or its `revoke`
   * when the store's epoch passed the one its connection was told of.
   */
  async syncLiveRuns(): Promise<void> {
    const live = this.connections.liveRunIds();
    if (live.length === 0) return;
    // One read for all of them; only a run with something to send costs more.
    for (const run of await this.store.liveRunWork(live)) {
      if (run.revocationEpoch > this.connections.toldEpoch(run.runId))
        this.connections.sendRevoke(run.runId, run.revocationEpoch);
      else if (run.commandWaiting) await this.connections.deliverNext(run.runId);
    }
  }

  /**
   * Reads the store every `intervalMs` for what other processes changed (syncLiveRuns): a
   * SQLite store sends no notice across processes, so an admin command or a console beside
   * this server is only seen this way. A poll whose store says nothing changed elsewhere
   * (externalChangeMark) reads nothing. `stop` ends the polling once the read under way is done.
   */
  pollStore(intervalMs: number, onFailure: (err: Error) => void): { stop(): Promise<void> } {
    let polling: Promise<void> = Promise.resolve();
    // Read before the sync: a commit after this read moves the mark, so the next poll sees it.
    let seen: number | null | undefined;
    const poll = async (): Promise<void> => {
      const mark = await this.store.externalChangeMark();
      if (mark !== null && mark === seen) return;
      await this.syncLiveRuns();
      seen = mark;
    };
    const timer = setInterval(() => {
      polling = polling.then(poll).catch(onFailure);
    }, intervalMs);
    return {
      stop: async () => {
        clearInterval(timer);
        await polling;
      },
    };
  }

  /** The runs with a live runner connection here now. */
  liveRunIds(): string[] {
    return this.connections.liveRunIds();
  }

  activeRunnerConnectionCount(runId: string): number {
    return this.connections.isLive(runId) ? 1 : 0;
  }

  /**
   * Stops: new upgrades are refused, each live runner is told `authority_shutdown` in its close
   * frame (it keeps its outbox and redials), the commits under way finish, then the store
   * closes, only when the server opened it (`stateDir`).
   */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    await this.connections.close();
    await this.upgrade?.close();
    if (this.ownsStore) await this.store.close();
  }

  /**
   * A refused upgrade (an Origin header, a query, extensions) is logged, and recorded on the run
   * its path names when that run is registered here, like every other refusal of a connection.
   */
  private async refusedUpgrade(error: TransportError, target: string): Promise<void> {
    this.options.observer?.handshake({ refused: error.code });
    this.log.refusal(`upgrade.refused ${error.code}`, `refused an upgrade: ${error.code}: ${error.message}`, {
      event: "upgrade.refused",
    });
    const path = target.split("?")[0]!;
    const runId = path.startsWith(RUNNER_CONNECT_PATH_PREFIX) ? path.slice(RUNNER_CONNECT_PATH_PREFIX.length) : "";
    if (!IDENTITY_PATTERN.test(runId)) return;
    try {
      await this.store.recordAuthFailure(runId, { code: error.code, message: error.message }, Date.now()); // a no-op for an unknown run
    } catch {
      // the store is closing: the log line above is all there is
    }
  }
}

const onCommitted = (callback: OnCommittedEvent | undefined) => (callback ? { onCommittedEvent: callback } : {});
