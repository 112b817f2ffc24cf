import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { InvalidArgumentError, type Command } from "commander";
import type { PrpClient } from "../client/index.js";
import { agentsDir } from "../agents/agents-dir.js";
import { CATALOG_ENV, loadCatalog } from "../agents/catalog.js";
import { advertisedAgents, initializeProber, type AgentProber, type AgentsOption } from "../worker/advertise.js";
import { PollLoop } from "../worker/poll-loop.js";
import { runnerEmittedNothing } from "../worker/runner-progress.js";
import { claimStarter } from "../worker/start-claim.js";
import { WorkerRecord } from "../worker/worker-record.js";
import { apiClient, withApiOptions, type ApiOptions } from "./api-target.js";
import { CliFailure, MISCONFIGURED, runAction } from "./authority-options.js";
import { parseDuration, parseLabels } from "./labels-option.js";
import { parseListen, parseNonNegativeInt, parsePositiveInt } from "./options.js";
import { visible } from "./terminal-text.js";
import { workerHealth } from "../ops/worker-health.js";
import { startHealthServer } from "../ops/health-server.js";
import { otelVariables } from "../telemetry/tracing-config.js";

interface WorkerOptions extends ApiOptions {
  labels?: Record<string, string>;
  agents?: AgentsOption;
  agentsDir?: string;
  maxRuns: number;
  once?: boolean;
  dir: string;
  drainTimeout?: number;
  pollWaitMs: number;
  harnessReadyMs?: number;
  healthAddr?: { host: string; port: number };
}

const MAX_RUNS = 256;
const MAX_POLL_WAIT_MS = 30_000;

function parseMaxRuns(value: string): number {
  const n = parsePositiveInt(value);
  if (n > MAX_RUNS) throw new InvalidArgumentError(`at most ${MAX_RUNS}, got ${value}`);
  return n;
}

/** The most agents a poll may advertise (API_SCHEMAS.WorkerPoll). */
const MAX_AGENTS = 32;

/** `--agents claude,codex` or `--agents auto`. */
export function parseAgents(value: string): AgentsOption {
  if (value === "auto") return "auto";
  const names = value.split(",").map((n) => n.trim());
  for (const name of names)
    if (!/^[a-z][a-z0-9-]{0,31}$/.test(name))
      throw new InvalidArgumentError(`expected agent names (claude,codex) or auto, got "${value}"`);
  if (names.length > MAX_AGENTS) throw new InvalidArgumentError(`at most ${MAX_AGENTS} agents, got ${names.length}`);
  return [...new Set(names)];
}

function parsePollWait(value: string): number {
  const n = parseNonNegativeInt(value);
  if (n > MAX_POLL_WAIT_MS) throw new InvalidArgumentError(`at most ${MAX_POLL_WAIT_MS}, got ${value}`);
  return n;
}

export function registerWorker(program: Command): void {
  withApiOptions(
    program
      .command("worker")
      .description("claim queued runs from an authority's API and run each one's prp-runnerd on this machine"),
  )
    .option(
      "--labels <k=v,…>",
      "the labels this worker offers: it claims only runs whose every label it holds",
      parseLabels,
    )
    .option(
      "--agents <names|auto>",
      "the named agents this worker runs (claude,codex), or auto: each installed one that probes ready; it claims runs labelled agent=NAME for each",
      parseAgents,
    )
    .option(
      "--agents-dir <dir>",
      "the folder named agents are installed in (default: PRP_AGENTS_DIR, else ~/.cache/prp-kit/agents)",
    )
    .requiredOption("--max-runs <n>", `runs at once, 1-${MAX_RUNS}`, parseMaxRuns)
    .option("--once", "claim one run, run it, report it, and exit with its runner's status")
    .option("--dir <dir>", "the worker's folder: state/<run>, workspaces/<run>, started.jsonl", "./prp-worker")
    .option(
      "--drain-timeout <dur>",
      "after a drain began (SIGTERM, Ctrl-C), how long before runs not yet started are given back (30s, 5m, 1500ms)",
      parseDuration,
    )
    .option(
      "--harness-ready-ms <n>",
      "passed to each prp-runnerd: how long its harness has to say ready (a loaded machine may need longer)",
      parsePositiveInt,
    )
    .option(
      "--poll-wait-ms <n>",
      `how long the authority may hold a poll that finds no run, 0-${MAX_POLL_WAIT_MS}`,
      parsePollWait,
      1000,
    )
    .option(
      "--health-addr <host:port>",
      "serve /healthz, /readyz (ready: a poll answered within 60 s) and /metrics (Prometheus) on this plain-HTTP address; its URL is printed as `health: URL` on stderr. Keep it loopback or private",
      parseListen,
    )
    .addHelpText(
      "after",
      `
--token-file holds a worker credential (prp_wkr_…), made on the authority's side by
  prp authority worker add NAME --out FILE
It can only poll: an API token does not work here, nor does the credential anywhere else.

The worker polls POST /v1/workers/poll, one request at a time: each poll reports the runners that
exited and claims runs while it has room. A claimed run's prp-runnerd starts with its one-use
ticket on its stdin (never in its arguments or environment), its state in DIR/state/RUN and, for
an agent, its workspace in DIR/workspaces/RUN. DIR/started.jsonl records each runner started
and each exit. Progress goes to stderr.

--agents advertises named agents (prp agents list) with every poll: a run submitted with
--agent NAME carries the label agent=NAME, and only a worker advertising NAME (or holding that
label) claims it. With auto, each agent installed in --agents-dir is probed at start and those
that are ready are advertised; one line per agent says its verdict. The runner finds the agent's
install in --agents-dir too.

Each runner leads its own process group: Ctrl-C reaches only the worker. The first SIGINT or
SIGTERM drains: no new runs, the running ones finish, then exit 0 (with --drain-timeout, runs
not started by then are given back to the queue and their runners killed). A second signal
stops every runner (each cancels its run), then exits 128 + the signal's number. A third kills them.

Exit status: 0 after a drain; with --once, the runner's own status (0: its terminal was
delivered; see prp-runnerd --help for the others; 1 when it could not start or was killed);
1 when the authority refuses the credential (revoked: the running runs finish first); 2 for a
bad command line.

Examples:
  prp worker --api https://prp.example:7400 --token-file worker.cred --labels pool=gpu --max-runs 4
  prp worker --api http://127.0.0.1:7400 --token-file worker.cred --max-runs 1 --once
  prp worker --api https://prp.example:7400 --token-file worker.cred --agents auto --max-runs 2`,
    )
    .action((opts: WorkerOptions, command: Command) =>
      runAction(async () => {
        if (opts.api === undefined)
          throw new CliFailure(
            "prp worker needs --api URL and --token-file F (a worker credential: prp authority worker add NAME --out F)",
            MISCONFIGURED,
          );
        if (opts.tokenFile === undefined)
          throw new CliFailure(
            "--api needs --token-file: a worker credential made by prp authority worker add NAME --out FILE",
            MISCONFIGURED,
          );
        const client = apiClient(opts, command)!;
        const code = await runWorker(client, opts);
        // A keep-alive socket or a lingering timer must not hold a finished worker.
        process.stderr.write("", () => process.exit(code));
      }),
    );
}

async function runWorker(client: PrpClient, opts: WorkerOptions): Promise<number> {
  const dir = resolve(opts.dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const log = (line: string) => process.stderr.write(`prp worker: ${line}\n`);
  const agentsFolder = agentsDir(opts.agentsDir);
  const record = new WorkerRecord(dir);
  const hidden = [join(dir, "state"), record.path, resolve(opts.tokenFile!)];
  const prober = initializeProber(agentsFolder, join(dir, "workspaces", "probe"), hidden);
  const agents = await workerAgents(opts.agents, agentsFolder, prober, log);
  // Read by the endpoints only once they serve, after the loop exists.
  const health = workerHealth(dir, () => loop);
  const loop = new PollLoop({
    labels: opts.labels ?? {},
    agents,
    maxRuns: opts.maxRuns,
    ...(opts.once ? { once: true } : {}),
    waitMs: opts.pollWaitMs,
    poll: health.wrapPoll((body, signal) => client.pollWorker(body, { signal })),
    start: health.wrapStart(
      claimStarter({
        dir,
        record,
        hide: [resolve(opts.tokenFile!)],
        agentsDir: agentsFolder,
        runnerEnv: otelVariables(process.env),
        ...(process.env[CATALOG_ENV] ? { agentCatalog: resolve(process.env[CATALOG_ENV]) } : {}),
        ...(opts.caBundlePath ? { caBundlePath: resolve(opts.caBundlePath) } : {}),
        ...(opts.harnessReadyMs ? { extraArgs: ["--harness-ready-ms", String(opts.harnessReadyMs)] } : {}),
      }),
    ),
    // The runner's own state proves it did nothing; the API, when it answers this credential,
    // may still veto (its run is no longer this claim, or has events).
    unstarted: async (runId) => {
      if (!runnerEmittedNothing(join(dir, "state", runId))) return false;
      let run;
      try {
        ({ run } = await client.getRun(runId));
      } catch {
        return true;
      }
      return run.dispatch?.state === "claimed" && run.eventCount === 0;
    },
    ...(opts.drainTimeout !== undefined ? { drainTimeoutMs: opts.drainTimeout } : {}),
    log,
  });
  const healthServer = opts.healthAddr
    ? await startHealthServer(opts.healthAddr, health.source, (m) => log(`warning: ${m}`)).catch((err: unknown) => {
        throw new CliFailure(`health_listen_failed: ${(err as Error).message}`, MISCONFIGURED);
      })
    : undefined;
  if (healthServer) log(`health: ${healthServer.url}`);
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals === 1) loop.drain();
    else if (signals === 2) loop.stop(signal);
    else loop.kill();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    return await loop.run();
  } finally {
    await healthServer?.close();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** What --agents advertises, checked against this machine's catalog; a name it lacks is a usage error. */
async function workerAgents(
  option: AgentsOption | undefined,
  dir: string,
  probe: AgentProber,
  log: (line: string) => void,
): Promise<string[]> {
  if (option === undefined) return [];
  const profiles = loadCatalog();
  if (!profiles.ok) throw new CliFailure(`prp worker: ${profiles.error.message}`, MISCONFIGURED);
  // A verdict may quote what the agent said: its controls are made visible.
  const advertised = await advertisedAgents(option, profiles.value, dir, probe, (line) => log(visible(line)));
  if (!advertised.ok) throw new CliFailure(`prp worker: ${advertised.error.message}`, MISCONFIGURED);
  log(
    advertised.value.length > 0
      ? `advertising agents ${advertised.value.join(",")}`
      : "advertising no agent: no named agent is ready here",
  );
  return advertised.value;
}
