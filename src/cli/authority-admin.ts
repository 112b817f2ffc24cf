import { InvalidArgumentError, type Command } from "commander";
import { CommandQueue } from "../authority/commands.js";
import { Credentials } from "../authority/credentials.js";
import { MAX_BOOTSTRAP_TTL_MS } from "../authority/limits.js";
import { SqliteAuthorityStore } from "../authority/sqlite-store.js";
import { storeFailureKind } from "../authority/store-failure.js";
import type { AuthorityStore, RunSnapshot } from "../authority/store.js";
import { parseJson } from "../contract/json-input.js";
import { MAX_PROTOCOL_VERSION } from "../contract/versions.js";
import { durableRunnerArgs } from "../runner/spawn.js";
import { RUNNER_CONNECT_PATH_PREFIX } from "../transport/upgrade-server.js";
import {
  CliFailure,
  MISCONFIGURED,
  refusal,
  runAction,
  withStore,
  withStoreOptions,
  type StoreOptions,
} from "./authority-options.js";
import { newIdSuffix } from "../contract/id-suffix.js";
import { parsePositiveInt, parseProtocolVersion } from "./options.js";
import { printableJson, visible } from "./terminal-text.js";
import { apiClient, viaApi, withApiOptions, type ApiOptions } from "./api-target.js";
import type { PrpClient } from "../client/index.js";
import { createRunRequest, type RunSpec } from "../api/create-run.js";
import { harnessArgs } from "../api/harness-args.js";
import type { CommandRequest } from "../contract/api/generated/types.js";
import { identityWithSuffix, type RunIdentity } from "../authority/identity.js";
import { runStateOf } from "../authority/run-state.js";
import { waitReason } from "../authority/wait-reason.js";
import { DEFAULT_DISPATCH } from "../api/dispatch-sweeper.js";

interface JsonOption {
  json?: boolean;
}

/** Prints one JSON line, or the text lines; either with no raw control character (terminal-text.ts). */
const print = (json: boolean | undefined, value: unknown, text: () => string[]) => {
  if (json) console.log(printableJson(JSON.stringify(value)));
  else for (const line of text()) console.log(visible(line));
};

async function knownRun(store: AuthorityStore, runId: string): Promise<RunSnapshot> {
  const run = await store.run(runId);
  if (!run)
    throw refusal({
      code: "unknown_run",
      path: "/runId",
      message: `no run ${runId} in this store (prp authority runs lists them)`,
    });
  return run;
}

interface RunCreateOptions extends StoreOptions, ApiOptions, JsonOption {
  runId?: string;
  sessionId?: string;
  runnerId?: string;
  environmentLeaseId?: string;
  turnId?: string;
  itemId?: string;
  workspace: string;
  script?: string;
  agent?: string;
  agentCommand?: string;
  prompt?: string;
  connectUrl?: string;
  observeCredentials?: boolean;
  protocolVersion: number;
  label: Array<[string, string]>;
  priority?: number;
}

/** `--label key=value`, collected: a key as the API's labels take it. */
function parseLabel(value: string, previous: Array<[string, string]>): Array<[string, string]> {
  const m = /^([a-z0-9][a-z0-9_.-]{0,62})=([^\u0000-\u001f\u007f]{0,256})$/.exec(value);
  if (!m) throw new InvalidArgumentError(`expected key=value with a lowercase key (a-z, 0-9, _ . -), got "${value}"`);
  return [...previous.filter(([k]) => k !== m[1]), [m[1]!, m[2]!]];
}

function parsePriority(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < -1000 || n > 1000)
    throw new InvalidArgumentError(`expected an integer from -1000 to 1000, got "${value}"`);
  return n;
}

/** `prp authority run create`: a run's identity, registered with its opening commands queued. */
function registerRunCreate(authority: Command): void {
  const run = authority
    .command("run")
    .description("runs in the authority's store (see: prp authority run create --help)");
  withApiOptions(
    withStoreOptions(
      run
        .command("create")
        .description(
          "register a new run (its identity) and queue its run.prepare and session.open (and turn.start with --prompt); prints the prp-runnerd flags that serve it",
        ),
    ),
  )
    .option("--run-id <id>", "the run id (default run_<time>_<random>); the other ids default to the same suffix")
    .option("--session-id <id>", "the normalized session id")
    .option("--runner-id <id>", "the runner instance id: the source of the run's events")
    .option("--environment-lease-id <id>", "the environment lease id")
    .option("--turn-id <id>", "the turn id")
    .option("--item-id <id>", "the item id")
    .option("--workspace <name>", "run.prepare's workspace", "default")
    .option(
      "--protocol-version <n>",
      "the run's protocol version, 1-3: its runner must offer exactly 1-N (prp-runnerd --protocol-max N, in the printed flags); 2 and 3 add session goals",
      parseProtocolVersion,
      MAX_PROTOCOL_VERSION,
    )
    .option(
      "--observe-credentials",
      "run.prepare opts in to auth.credentials.updated (observeCredentials: true); the runner needs --credential-file",
    )
    .option(
      "--script <name|file>",
      "the fake harness script the runner will play (only shapes the printed prp-runnerd flags)",
    )
    .option(
      "--agent <name>",
      "instead of --script: a named agent of the authority's catalog; the run carries the label agent=NAME",
    )
    .option(
      "--agent-command <cmd>",
      "instead of --script: the ACP agent command line the runner will drive (only shapes the printed flags)",
    )
    .option(
      "--label <key=value>",
      "a label the run carries (repeatable), for filtering runs (prp authority runs --api, GET /v1/runs)",
      parseLabel,
      [] as Array<[string, string]>,
    )
    .option("--priority <n>", "the run's priority, -1000 to 1000 (higher first); default 0", parsePriority)
    .option(
      "--prompt <text>",
      "also queue turn.start with this text (or send it later: prp authority command RUN turn.start --payload …)",
    )
    .option(
      "--connect-url <url>",
      "the daemon's base URL (what prp authority serve printed), to print the whole connect URL",
    )
    .option("--json", "print one JSON line: {runId, identity, protocolVersion, commands, connectPath, runnerArgs}")
    .addHelpText(
      "after",
      `
Works against the store directly, beside a running daemon (SQLite WAL): the daemon serves the
run as soon as a runner dials it with a ticket (prp authority ticket RUN).

Examples:
  prp authority run create --store sqlite:/var/lib/prp/authority --server-key-file key --script happy-path
  prp authority run create --json --prompt "fix the failing test" --agent gemini
  prp authority run create --json --prompt "fix the failing test" --agent-command "my-agent --acp"`,
    )
    .action((opts: RunCreateOptions, command: Command) =>
      runAction(async () => {
        if ([opts.script, opts.agent, opts.agentCommand].filter((v) => v !== undefined).length > 1)
          throw new CliFailure("choose one of --script, --agent and --agent-command", MISCONFIGURED);
        const client = apiClient(opts, command);
        const created = client ? await createThroughApi(client, opts, command) : await createInStore(opts);
        const { identity, commands } = created;
        const connectPath = `${RUNNER_CONNECT_PATH_PREFIX}${identity.runId}`;
        const harness = harnessArgs(runSpecOf(opts));
        const runnerArgs = durableRunnerArgs({
          connectUrl: `${opts.connectUrl ?? "<authority-url>"}${connectPath}`,
          stateDir: "<state-dir>",
          identity,
          harnessArgs: harness,
          protocolMax: opts.protocolVersion,
        });
        print(
          opts.json,
          { runId: identity.runId, identity, protocolVersion: opts.protocolVersion, commands, connectPath, runnerArgs },
          () => [
            `run ${identity.runId} registered for protocol version ${opts.protocolVersion}; queued ${commands.map((c) => c.type).join(", ")}`,
            `start its runner with a ticket (prp authority ticket ${identity.runId}) in PAPERCLIP_RUNNER_BOOTSTRAP_TICKET:`,
            `  prp-runnerd ${runnerArgs.map((a) => (/^[\w./:<>@=-]+$/.test(a) ? a : JSON.stringify(a))).join(" ")}`,
          ],
        );
      }),
    );
}

interface CreatedRun {
  identity: RunIdentity;
  commands: Array<{ commandId: string; controllerSeq: number; type: string }>;
}

/** The run as the API would be asked for it: the same spec, whichever way it is created. */
function runSpecOf(opts: RunCreateOptions): RunSpec {
  return {
    agent:
      opts.agent !== undefined
        ? { kind: "profile", profile: opts.agent }
        : opts.agentCommand !== undefined
          ? { kind: "command", command: opts.agentCommand }
          : { kind: "fake", script: opts.script ?? "happy-path" },
    workspace: opts.workspace,
    protocolVersion: opts.protocolVersion,
    ...(opts.prompt !== undefined ? { prompt: opts.prompt } : {}),
    ...(opts.observeCredentials ? { observeCredentials: true } : {}),
    ...(opts.label.length > 0 ? { labels: Object.fromEntries(opts.label) } : {}),
    ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
  };
}

/** The run, its spec and its opening commands in one store transaction, as POST /v1/runs writes them. */
async function createInStore(opts: RunCreateOptions): Promise<CreatedRun> {
  const generated = identityWithSuffix(newIdSuffix());
  const identity = {
    runnerInstanceId: opts.runnerId ?? generated.runnerInstanceId,
    environmentLeaseId: opts.environmentLeaseId ?? generated.environmentLeaseId,
    runId: opts.runId ?? generated.runId,
    normalizedSessionId: opts.sessionId ?? generated.normalizedSessionId,
    turnId: opts.turnId ?? generated.turnId,
    itemId: opts.itemId ?? generated.itemId,
  };
  const wanted = createRunRequest(runSpecOf(opts), identity, null, Date.now());
  if (!wanted.ok) throw refusal(wanted.error);
  return withStore(
    opts,
    async (store) => {
      const created = await store.createRun(wanted.value);
      if (!created.ok) throw refusal(created.error);
      if (!created.value.created)
        throw refusal({
          code: "run_exists",
          path: "/runId",
          message: `run ${identity.runId} is already in this store`,
        });
      const commands = wanted.value.commands.map(({ commandId, controllerSeq, type }) => ({
        commandId,
        controllerSeq,
        type,
      }));
      return { identity, commands };
    },
    { create: true },
  );
}

/** POST /v1/runs: the API names the run's ids, so the id options are refused rather than ignored. */
async function createThroughApi(client: PrpClient, opts: RunCreateOptions, command: Command): Promise<CreatedRun> {
  for (const name of ["runId", "sessionId", "runnerId", "environmentLeaseId", "turnId", "itemId"])
    if (command.getOptionValueSource(name) === "cli")
      throw new CliFailure(
        `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} cannot be used with --api: the API names the run's ids`,
        MISCONFIGURED,
      );
  const created = await viaApi(() => client.createRun(runSpecOf(opts)));
  return {
    identity: created.identity,
    commands: created.commands.map(({ commandId, controllerSeq, type }) => ({ commandId, controllerSeq, type })),
  };
}

interface TicketOptions extends StoreOptions, ApiOptions, JsonOption {
  ttlMs: number;
}

function registerTicket(authority: Command): void {
  withApiOptions(
    withStoreOptions(
      authority
        .command("ticket")
        .description("issue a one-use bootstrap ticket for a run; printed once, stored only as a digest")
        .argument("<run>", "the run id"),
    ),
  )
    .option(
      "--ttl-ms <n>",
      `how long the ticket is good for, 1000-${MAX_BOOTSTRAP_TTL_MS}`,
      parsePositiveInt,
      MAX_BOOTSTRAP_TTL_MS,
    )
    .option("--json", "print one JSON line: {runId, ticket, credentialId, expiresAt}")
    .addHelpText(
      "after",
      `
The ticket is printed once (alone on stdout without --json, so that $(…) takes it) and is
never stored: only its credential id and sealed auth-key digest are. Hand it to prp-runnerd in
PAPERCLIP_RUNNER_BOOTSTRAP_TICKET, never on a command line; a runner's first handshake
consumes it, and a second use is refused (credential_used).

Example:
  PAPERCLIP_RUNNER_BOOTSTRAP_TICKET=$(prp authority ticket run_1 --server-key-file key) prp-runnerd --connect-url … `,
    )
    .action((runId: string, opts: TicketOptions, command: Command) =>
      runAction(async () => {
        const client = apiClient(opts, command);
        if (client) {
          // An admin-scope token: the API issues the ticket and names the runner's flags.
          const t = await viaApi(() => client.createTicket(runId, { ttlMs: opts.ttlMs }));
          print(opts.json, { runId, ticket: t.ticket, expiresAt: t.expiresAt, connectUrl: t.connectUrl }, () => [
            t.ticket,
          ]);
          if (!opts.json) process.stderr.write(`prp: ticket for ${runId}, one use, expires ${t.expiresAt}\n`);
          return;
        }
        const issued = await withStore(opts, async (store) => {
          await knownRun(store, runId);
          // As POST …/tickets: a ticket by hand takes a queued run out of the queue.
          const taken = await store.claimByHand(runId, Date.now());
          if (!taken.ok) throw refusal(taken.error);
          const credentials = Credentials.create({ store });
          if (!credentials.ok) throw refusal(credentials.error);
          const ticket = await credentials.value.issueBootstrapTicket(runId, opts.ttlMs);
          if (!ticket.ok) throw refusal(ticket.error);
          return ticket.value;
        });
        const expiresAt = new Date(issued.expiresAtUnixMs).toISOString();
        print(opts.json, { runId, ticket: issued.token, credentialId: issued.credentialId, expiresAt }, () => [
          issued.token,
        ]);
        if (!opts.json) process.stderr.write(`prp: ticket for ${runId}, one use, expires ${expiresAt}\n`);
      }),
    );
}

interface CommandOptions extends StoreOptions, ApiOptions, JsonOption {
  payload: string;
  id?: string;
}

function registerCommand(authority: Command): void {
  withApiOptions(
    withStoreOptions(
      authority
        .command("command")
        .description("queue a PRP command for a run; the daemon delivers it to the run's runner, one command at a time")
        .argument("<run>", "the run id")
        .argument("<type>", "the command type, e.g. turn.start, turn.interrupt, request.resolve, run.cancel"),
    ),
  )
    .option("--payload <json>", "the command's payload, a JSON object", "{}")
    .option(
      "--id <commandId>",
      "the command id (default command_prp_<controllerSeq>); queueing the same id, type and payload again is a no-op. With --api it is the request's Idempotency-Key",
    )
    .option("--json", "print one JSON line: {runId, commandId, controllerSeq, type, created}")
    .addHelpText(
      "after",
      `
The command goes through the contract codec before it is stored: a payload that is not a JSON
object, a command the schema refuses, or a run that has ended (run_ended: its run.terminal is
committed, no runner will take it) is an error (exit 1) and nothing is queued.

Example:
  prp authority command run_1 turn.start --payload '{"text":"fix the failing test","turnId":"turn_1"}'`,
    )
    .action((runId: string, type: string, opts: CommandOptions, command: Command) =>
      runAction(async () => {
        const parsed = parseJson(opts.payload);
        if (!parsed.ok) throw refusal({ ...parsed.error, path: `--payload${parsed.error.path}` });
        const client = apiClient(opts, command);
        const queued = client
          ? await viaApi(() =>
              client.sendCommand(
                runId,
                { type: type as CommandRequest["type"], payload: parsed.value as Record<string, unknown> },
                opts.id !== undefined ? { idempotencyKey: opts.id } : {},
              ),
            ).then((r) => ({ ...r, created: r.created ?? true }))
          : await withStore(opts, async (store) => {
              await knownRun(store, runId);
              // A run whose run.terminal is committed is refused by the queue (run_ended): no runner would take it.
              const q = await new CommandQueue({ store }).queueCommand(runId, type, parsed.value, opts.id);
              if (!q.ok) throw refusal(q.error);
              return q.value;
            });
        const { commandId, controllerSeq, created } = queued;
        print(opts.json, { runId, commandId, controllerSeq, type, created }, () => [
          `${created ? "queued" : "already queued"} ${type} ${commandId} (controllerSeq ${controllerSeq}) for ${runId}`,
        ]);
      }),
    );
}

function registerRuns(authority: Command): void {
  withApiOptions(
    withStoreOptions(
      authority.command("runs").description("list the store's runs: cursor, terminal, commands, connections"),
    ),
  )
    .option(
      "--json",
      "one JSON line per run: {runId, state (queued, claimed, pending, running, ended), waiting (why a queued run waits), dispatch (its queue record, or null), ackedSourceSeq, terminal, commands, pendingCommands, connectionCount, currentConnectionId, revocationEpoch, protocolVersion, lastRunner}; lastRunner is the newest connection and the build its runner reported ({connectionId, connectedAt, protocolVersion, runnerVersion, runnerDigest, contractDigest}), or null",
    )
    .action((opts: StoreOptions & ApiOptions & JsonOption, command: Command) =>
      runAction(async () => {
        const client = apiClient(opts, command);
        if (client) return printApiRuns(client, opts.json === true);
        const rows = await withStore(opts, async (store) => {
          const runIds = await store.runIds();
          const dispatched = new Map((await store.dispatch(runIds)).map((d) => [d.runId, d]));
          const queue = [...dispatched.values()].some((d) => d.state === "queued")
            ? {
                caps: await store.caps(),
                workers: await store.workers(),
                nowMs: Date.now(),
                graceMs: DEFAULT_DISPATCH.graceMs,
              }
            : null;
          const out = [];
          for (const runId of runIds) {
            const run = await knownRun(store, runId);
            const dispatch = dispatched.get(runId) ?? null;
            const pendingCommands = (await store.commands(runId)).filter((c) => c.status === null).length;
            const lastRunner = (await store.runnerConnections(runId)).at(-1) ?? null;
            out.push({
              runId,
              state: runStateOf(run, dispatch),
              waiting: dispatch?.state === "queued" && queue ? waitReason(dispatch.labels, queue) : null,
              dispatch,
              ackedSourceSeq: run.ackedSourceSeq,
              terminal: run.terminalSourceSeq !== null,
              commands: run.commandCount,
              pendingCommands,
              connectionCount: run.connectionCount,
              currentConnectionId: run.currentConnectionId,
              revocationEpoch: run.revocationEpoch,
              protocolVersion: run.protocolVersion,
              lastRunner,
            });
          }
          return out;
        });
        // A runner's hello names its version: shown with its controls visible, like any peer's text.
        if (opts.json) for (const row of rows) console.log(printableJson(JSON.stringify(row)));
        else if (rows.length === 0) console.log("no runs");
        else
          for (const r of rows)
            console.log(
              visible(
                `${r.runId}  ${dispatchLine(r.state, r.dispatch, r.waiting)}  events ${r.ackedSourceSeq}${r.terminal ? " (terminal)" : ""}  commands ${r.commands} (${r.pendingCommands} pending)  connections ${r.connectionCount}  epoch ${r.revocationEpoch}${r.lastRunner ? `  runner ${r.lastRunner.runnerVersion ?? "?"} contract ${r.lastRunner.contractDigest ?? "unreported"}` : ""}`,
              ),
            );
      }),
    );
}

/** A run's state as a person reads it: why a queued run waits, who holds a claimed one, why a dispatch ended. */
function dispatchLine(
  state: string,
  dispatch: { workerId: string | null; endReason: string | null; endDetail: string | null; attempts: number } | null,
  waiting: string | null,
): string {
  if (state === "queued") return `queued (${waiting ?? "waiting"})`;
  if (state === "claimed") return `claimed by ${dispatch?.workerId ?? "hand"}`;
  if (state === "ended" && dispatch?.endReason)
    return `ended: ${dispatch.endReason}${dispatch.endDetail ? ` (${dispatch.endDetail})` : ""}`;
  return state;
}

/** The API's run list, every page: what the API says of each run (its state, events, labels). */
async function printApiRuns(client: PrpClient, json: boolean): Promise<void> {
  let any = false;
  await viaApi(async () => {
    for await (const r of client.allRuns({ limit: 500 })) {
      any = true;
      const labels = Object.entries(r.labels).map(([k, v]) => `${k}=${v}`);
      print(json, r, () => [
        `${r.runId}  ${dispatchLine(r.state, r.dispatch, r.dispatch?.waiting ?? null)}  events ${r.eventCount}  created ${r.createdAt}${labels.length > 0 ? `  ${labels.join(",")}` : ""}`,
      ]);
    }
  });
  if (!any && !json) console.log("no runs");
}

function registerRevoke(authority: Command): void {
  withStoreOptions(
    authority
      .command("revoke")
      .description(
        "revoke a run's lease and unused tickets; its live runner is told, flushes its outbox and stops (exit 3)",
      )
      .argument("<run>", "the run id"),
  )
    .option("--json", "print one JSON line: {runId, revocationEpoch, revokedCredentials}")
    .action((runId: string, opts: StoreOptions & JsonOption) =>
      runAction(async () => {
        const revoked = await withStore(opts, async (store) => {
          await knownRun(store, runId);
          const r = await revokeMakingRoom(store, runId);
          if (!r.ok) throw refusal(r.error);
          return r.value;
        });
        print(opts.json, { runId, ...revoked }, () => [
          `revoked ${runId}: epoch ${revoked.revocationEpoch}, ${revoked.revokedCredentials} credential(s)`,
        ]);
      }),
    );
}

/**
 * A revoke adds no page to the store, but SQLite writes it to the WAL first: on a full disk the
 * WAL is started over (its room reused) and the revoke tried once more, so that a run can still
 * be stopped when nothing else can be written.
 */
async function revokeMakingRoom(store: AuthorityStore, runId: string) {
  try {
    return await store.revoke(runId, undefined, Date.now());
  } catch (err) {
    if (storeFailureKind(err) !== "full" || !(store instanceof SqliteAuthorityStore) || !store.restartJournal())
      throw err;
    return store.revoke(runId, undefined, Date.now());
  }
}

/** The admin commands: each opens the store itself, beside a live daemon. */
export function registerAuthorityAdmin(authority: Command): void {
  registerRunCreate(authority);
  registerTicket(authority);
  registerCommand(authority);
  registerRuns(authority);
  registerRevoke(authority);
}
