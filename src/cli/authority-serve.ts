import { readFileSync, rmSync } from "node:fs";
import type { Command } from "commander";
import { InvalidArgumentError } from "commander";

export { parseListen };
import { describeStore } from "../authority/open-store.js";
import { AuthorityServer } from "../authority/server.js";
import type { AuthorityStore } from "../authority/store.js";
import { ApiServer, type ApiServerHandle } from "../api/server.js";
import type { TlsIdentity } from "../transport/upgrade-server.js";
import type { ConsoleServer } from "../console/server.js";
import { StoreSource } from "../console/store-source.js";
import { consoleUrlFile, DEFAULT_CONSOLE_LISTEN, publishConsoleUrl, startConsole } from "./console-serve.js";
import {
  CliFailure,
  loadServerKey,
  MISCONFIGURED,
  openCliStore,
  runAction,
  storeLocation,
  withStoreOptions,
  type StoreOptions,
} from "./authority-options.js";
import { jsonLogger } from "./json-log.js";
import { parseListen, parsePositiveInt } from "./options.js";
import { runnerBuild } from "../runner/runner-build.js";
import { runnerContractFrom, type RunnerContractFlags } from "../authority/runner-contract.js";
import { withRunnerContractOptions } from "./runner-contract-options.js";
import { authorityHealth } from "../ops/authority-health.js";
import { startHealthServer, type HealthServerHandle } from "../ops/health-server.js";
import { startTracing } from "../telemetry/tracing.js";

interface ServeOptions extends StoreOptions, RunnerContractFlags {
  listen: { host: string; port: number };
  tlsCert?: string;
  tlsKey?: string;
  pollMs: number;
  leaseTtlMs?: number;
  heartbeatMs?: number;
  /** `--console [host:port]`: true for the default address. */
  console?: { host: string; port: number } | true;
  consoleUrlFile?: string;
  /** `--api HOST:PORT`: also serve the HTTP API v1 on the same store. */
  api?: { host: string; port: number };
  corsOrigin?: string;
  workerHeartbeatMs?: number;
  workerGraceMs?: number;
  maxAttempts?: number;
  /** `--health-addr HOST:PORT`: /healthz, /readyz and /metrics on their own address. */
  healthAddr?: { host: string; port: number };
}

/** `scheme://host[:port]`, exactly one origin: CORS opens to nothing wider. */
function parseOrigin(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || url.origin !== value)
    throw new InvalidArgumentError(`expected one origin such as https://app.example.com, got "${value}"`);
  return value;
}

/** The TLS identity from `--tls-cert` and `--tls-key`, both or neither. */
function tlsIdentity(opts: ServeOptions): TlsIdentity | undefined {
  if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined))
    throw new CliFailure("--tls-cert and --tls-key go together", MISCONFIGURED);
  if (opts.tlsCert === undefined) return undefined;
  try {
    return { cert: readFileSync(opts.tlsCert), key: readFileSync(opts.tlsKey!) };
  } catch (err) {
    throw new CliFailure(`tls_unreadable: ${(err as Error).message}`, MISCONFIGURED);
  }
}

export function registerAuthorityServe(authority: Command): void {
  withRunnerContractOptions(
    withStoreOptions(
      authority
        .command("serve")
        .description(
          "run the control-plane authority as a daemon: many runs and runners at once, until SIGTERM or SIGINT",
        ),
    ),
  )
    .option(
      "--listen <host:port>",
      "where to listen; port 0 takes a free port (the bound URL is printed). Without TLS the host must be loopback",
      parseListen,
      { host: "127.0.0.1", port: 0 },
    )
    .option(
      "--tls-cert <file>",
      "serve wss:// with this PEM certificate chain (with --tls-key); runners trust it through their roots or --ca-bundle-path",
    )
    .option("--tls-key <file>", "the certificate's PEM private key")
    .option(
      "--poll-ms <n>",
      "how often the daemon reads the store for what admin commands changed (new commands, revocations)",
      parsePositiveInt,
      200,
    )
    .option("--lease-ttl-ms <n>", "connection lease TTL, 60000 to 86400000 (default 60 s)", parsePositiveInt)
    .option(
      "--heartbeat-ms <n>",
      "how often the authority pings each quiet runner, 100 to 60000 (default 30000); a runner that misses 3 beats is closed as dead",
      parsePositiveInt,
    )
    .option(
      "--console [host:port]",
      "also serve the console (as prp console does) on this address, default 127.0.0.1:0; its URL, with its access token, is written to --console-url-file (mode 600), and `console: ADDRESS (… FILE …)` printed, without the token",
      parseListen,
    )
    .option(
      "--console-url-file <file>",
      "where --console writes its URL with the access token (default: console-url in the sqlite: store's folder, else .prp/console-url); removed at exit",
    )
    .option(
      "--api <host:port>",
      "also serve the HTTP API v1 (docs/api.md) on this address, on the same store; without TLS the host must be loopback. Its URL is printed as `api: URL` after the runner URL",
      parseListen,
    )
    .option(
      "--cors-origin <origin>",
      "with --api: the one browser origin (scheme://host[:port]) allowed to call the API; CORS stays closed without it",
      parseOrigin,
    )
    .option(
      "--worker-heartbeat-ms <n>",
      "with --api: how often a worker polls at least (default 5000)",
      parsePositiveInt,
    )
    .option(
      "--worker-grace-ms <n>",
      "with --api: a worker silent this long loses its claims; a run none of whose events is committed goes back to the queue (default 30000). Give every instance on one store the same",
      parsePositiveInt,
    )
    .option(
      "--max-attempts <n>",
      "with --api: claims a run may lose (its worker lost, its runner gone before any event) before it ends failed with worker_lost (default 3)",
      parsePositiveInt,
    )
    .option(
      "--health-addr <host:port>",
      "also serve /healthz, /readyz and /metrics (Prometheus) on this plain-HTTP address, without a token; its URL is printed as `health: URL`. A non-loopback address is allowed with a warning: keep it on a private network (--api serves the same paths)",
      parseListen,
    )
    .addHelpText(
      "after",
      `
Prints the bound URL (ws://HOST:PORT, or wss:// with TLS) on stdout, then logs one JSON object
per line on stderr: {time, level, event, runId?, connectionId?, message?}. Never a ticket, lease
token, key or the console's access token (that is in --console-url-file, readable by you only). Refuses to start without a server key (--server-key-file or
PRP_AUTHORITY_SERVER_KEY): make one with \`prp authority key --out FILE\`.

Each runner reports the contract digest it was built for (prp-runnerd --build-metadata). Under
--runner-contract equal (the default) a runner built for another contract is refused at the
handshake with contract_mismatch ("runner built for contract X, this control plane speaks Y:
upgrade the runner image"), logged as runner.refused; the runner exits 7 with its ticket unspent.

The admin commands (prp authority run create, ticket, command, runs, revoke; prp events) open
the same store beside the daemon; the daemon reads it every --poll-ms and delivers new
commands and revocations to the runners connected to it.

--api HOST:PORT serves the HTTP API v1 beside the runner listener, on the same store (docs/api.md):
create runs, issue tickets, read and follow events (SSE), queue commands. Every route but
GET /v1/openapi.json needs an API token (prp authority token create). Without TLS it listens on
loopback only; with --tls-cert/--tls-key it serves https with the same certificate.

SIGTERM or SIGINT: stop taking connections (and the API's), close each runner's connection with the reason
authority_shutdown (runners keep their outbox and redial), let commits under way finish, close
the store, exit 0.

Examples:
  prp authority key --out /etc/prp/authority-key
  prp authority serve --store sqlite:/var/lib/prp/authority --server-key-file /etc/prp/authority-key --listen 127.0.0.1:43127
  prp authority serve --listen 0.0.0.0:443 --tls-cert cert.pem --tls-key key.pem --server-key-file key
  prp authority serve --server-key-file key --api 127.0.0.1:8080 --cors-origin https://app.example.com`,
    )
    .action((opts: ServeOptions) => runAction(() => serve(opts)));
}

async function serve(opts: ServeOptions): Promise<number> {
  const log = jsonLogger((line) => process.stderr.write(line));
  const location = storeLocation(opts);
  const tls = tlsIdentity(opts);
  const serverKey = loadServerKey(opts);
  const build = runnerBuild();
  if (opts.corsOrigin !== undefined && opts.api === undefined)
    throw new CliFailure("--cors-origin goes with --api", MISCONFIGURED);
  for (const [name, value] of Object.entries({
    "--worker-heartbeat-ms": opts.workerHeartbeatMs,
    "--worker-grace-ms": opts.workerGraceMs,
    "--max-attempts": opts.maxAttempts,
  }))
    if (value !== undefined && opts.api === undefined) throw new CliFailure(`${name} goes with --api`, MISCONFIGURED);
  let store: AuthorityStore;
  let authority: AuthorityServer | undefined;
  let healthServer: HealthServerHandle | undefined;
  // Set once the API listens: each commit wakes its followers at once rather than at the next poll.
  let api: ApiServerHandle | undefined;
  // The console reads and queues through the daemon's own store; it is woken by the same commits.
  let consoleServer: ConsoleServer | undefined;
  try {
    store = await openCliStore(location, {
      serverKey,
      create: true,
      log: (message) => log({ level: "warn", event: "store.note", message }),
    });
  } catch (err) {
    serverKey.destroy();
    throw err;
  }
  const health = authorityHealth(store, () => authority);
  try {
    authority = AuthorityServer.open({
      store,
      observer: health.metrics.observer,
      runnerVersion: build.version,
      runnerDigest: build.digest,
      runnerContract: runnerContractFrom(opts, build.contractDigest),
      ...(opts.leaseTtlMs !== undefined ? { leaseTtlMs: opts.leaseTtlMs } : {}),
      ...(opts.heartbeatMs !== undefined ? { heartbeatIntervalMs: opts.heartbeatMs } : {}),
      ...(tls ? { tls } : {}),
      // After each commit, not inside it: the API's followers (and the console's) read what is already committed.
      ...(opts.api || opts.console
        ? {
            afterCommit: (runIds: ReadonlySet<string>) =>
              runIds.forEach((r) => {
                api?.committed(r);
                consoleServer?.committed(r);
              }),
          }
        : {}),
      log: (message, fields) => log({ level: "info", event: fields?.event ?? "authority.note", ...fields, message }),
    });
  } catch (err) {
    await store.close();
    serverKey.destroy();
    throw new CliFailure((err as Error).message, MISCONFIGURED);
  }
  let url: string;
  try {
    url = await authority.listen(opts.listen.port, opts.listen.host);
  } catch (err) {
    await authority.close();
    await store.close();
    serverKey.destroy();
    throw new CliFailure(`listen_failed: ${(err as Error).message}`, MISCONFIGURED);
  }
  console.log(url);
  // Only the API makes spans here (the requests that create runs): no API, nothing to trace.
  const tracing = opts.api
    ? await startTracing("prp-authority", process.env, (message) =>
        log({ level: "warn", event: "traces.note", message }),
      )
    : null;
  if (opts.api) {
    try {
      api = await ApiServer.start({
        store,
        host: opts.api.host,
        port: opts.api.port,
        runnerConnectUrl: url,
        commandQueued: (runId) => authority.commandQueued(runId),
        runClaimed: (waitedMs) => health.metrics.runClaimed(waitedMs),
        ...(tls ? { tls } : {}),
        ...(opts.corsOrigin !== undefined ? { corsOrigin: opts.corsOrigin } : {}),
        dispatch: {
          ...(opts.workerHeartbeatMs ? { heartbeatMs: opts.workerHeartbeatMs } : {}),
          ...(opts.workerGraceMs ? { graceMs: opts.workerGraceMs } : {}),
          ...(opts.maxAttempts ? { maxAttempts: opts.maxAttempts } : {}),
        },
        onError: (err) => log({ level: "warn", event: "api.failed", message: err.message }),
        health: health.source,
      });
    } catch (err) {
      await authority.close();
      await store.close();
      serverKey.destroy();
      throw new CliFailure(`api_listen_failed: ${(err as Error).message}`, MISCONFIGURED);
    }
    console.log(`api: ${api.url}`);
    log({ level: "info", event: "api.listening", url: api.url });
  }
  if (opts.healthAddr) {
    try {
      healthServer = await startHealthServer(opts.healthAddr, health.source, (message) =>
        log({ level: "warn", event: "health.exposed", message }),
      );
    } catch (err) {
      await api?.close();
      await authority.close();
      await store.close();
      serverKey.destroy();
      throw new CliFailure(`health_listen_failed: ${(err as Error).message}`, MISCONFIGURED);
    }
    console.log(`health: ${healthServer.url}`);
  }
  log({
    level: "info",
    event: "authority.listening",
    url,
    store: describeStore(location),
    tls: tls !== undefined,
    pid: process.pid,
  });
  // The console reads and queues through the daemon's own store; closing it leaves the store open.
  const urlFile = consoleUrlFile(location, opts.consoleUrlFile);
  if (opts.console) {
    try {
      consoleServer = await startConsole(
        new StoreSource(store, async () => {}),
        opts.console === true ? DEFAULT_CONSOLE_LISTEN : opts.console,
        { pollMs: opts.pollMs, print: () => {}, commandQueued: (runId) => authority.commandQueued(runId) },
      );
      console.log(publishConsoleUrl(urlFile, consoleServer.url));
    } catch (err) {
      await consoleServer?.close();
      await healthServer?.close();
      await api?.close();
      await authority.close();
      await store.close();
      serverKey.destroy();
      throw err;
    }
  }

  // What admin processes changed in the store reaches the live runners within one poll.
  const poller = authority.pollStore(opts.pollMs, (err) =>
    log({ level: "warn", event: "authority.poll_failed", message: err.message }),
  );

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  process.on("SIGTERM", () => {}); // one shutdown: a second signal waits for it
  process.on("SIGINT", () => {});
  log({ level: "info", event: "authority.stopping", signal });
  await consoleServer?.close();
  await api?.close();
  await healthServer?.close();
  if (consoleServer) rmSync(urlFile, { force: true });
  await poller.stop();
  await authority.close();
  await store.close();
  serverKey.destroy();
  await tracing?.shutdown(); // the last request spans leave before the process does
  log({ level: "info", event: "authority.stopped" });
  return 0;
}
