import { isIP } from "node:net";
import type { Command } from "commander";
import { openAuthorityStore } from "../authority/open-store.js";
import type { AuthorityStore } from "../authority/store.js";
import { ReplaySource } from "../console/replay-source.js";
import type { RunSource } from "../console/run-source.js";
import { ConsoleServer } from "../console/server.js";
import { StoreSource } from "../console/store-source.js";
import { StateError } from "../storage/private-sqlite.js";
import { CliFailure, loadServerKey, MISCONFIGURED, refusal, runAction, storeLocation, withStoreOptions, type StoreOptions } from "./authority-options.js";
import { parseListen } from "./authority-serve.js";
import { parsePositiveInt } from "./options.js";

interface ConsoleCliOptions extends StoreOptions {
  listen: { host: string; port: number };
  pollMs: number;
  bundlesDir?: string;
}

export const DEFAULT_CONSOLE_LISTEN = { host: "127.0.0.1", port: 0 };

const isLoopback = (host: string): boolean => host === "localhost" || (isIP(host) === 4 && host.startsWith("127.")) || host === "::1";

/** Starts a console on `source`, prints its URL (stdout) and a warning for a non-loopback address (stderr). */
export async function startConsole(source: RunSource, listen: { host: string; port: number }, options: { pollMs?: number; bundlesDir?: string; print?: (url: string) => void } = {}): Promise<ConsoleServer> {
  let server: ConsoleServer;
  try {
    server = await ConsoleServer.start({ source, host: listen.host, port: listen.port, ...(options.pollMs ? { pollMs: options.pollMs } : {}), ...(options.bundlesDir ? { bundlesDir: options.bundlesDir } : {}) });
  } catch (err) {
    await source.close();
    throw new CliFailure(`listen_failed: ${(err as Error).message}`, MISCONFIGURED);
  }
  if (!isLoopback(listen.host)) process.stderr.write(`prp: warning: the console listens on ${listen.host}, not loopback: anyone who can reach it and has the URL can watch runs and send commands; it speaks plain HTTP\n`);
  (options.print ?? ((url: string) => console.log(url)))(server.url);
  return server;
}

/** Resolves at the first SIGINT or SIGTERM. */
export const untilStopped = (): Promise<NodeJS.Signals> =>
  new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve(signal);
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });

/** A store source over the store at `opts` (closing it closes the store and zeroes the key). */
export async function storeSource(opts: StoreOptions): Promise<StoreSource> {
  const location = storeLocation(opts);
  const key = loadServerKey(opts);
  let store: AuthorityStore;
  try {
    store = await openAuthorityStore(location, { serverKey: key });
  } catch (err) {
    key.destroy();
    if (err instanceof StateError) throw new CliFailure(err.message, MISCONFIGURED);
    throw err;
  }
  return new StoreSource(store, async () => {
    await store.close();
    key.destroy();
  });
}

export function registerConsole(program: Command): void {
  withStoreOptions(
    program
      .command("console")
      .description("a live console in the browser: runs, each run's timeline and session, answers to its questions, interrupt and cancel; or step through a replayed FILE")
      .argument("[file]", "instead of the store: a replay fixture (.json) or an NDJSON transcript (.ndjson, .jsonl) to step through"),
  )
    .option("--listen <host:port>", "where the console listens (default 127.0.0.1:0, a free port); a warning when it is not loopback", parseListen, DEFAULT_CONSOLE_LISTEN)
    .option("--poll-ms <n>", "how often the store is read for new events and command results", parsePositiveInt, 200)
    .option("--bundles-dir <dir>", "where runs' native execution bundles are: DIR/<runId>/bundle/ (prp demo's layout: .prp/demo)")
    .addHelpText(
      "after",
      `
Prints the console's URL with a random access token (like Jupyter's) on stdout: open it in a
browser. A request without the token gets 401. Runs until Ctrl-C (SIGINT) or SIGTERM.

Reads the authority's store beside a running daemon (prp authority serve), as prp events does;
commands from the page (request.resolve, turn.interrupt, run.cancel) go through the command
queue and its contract codec, and the daemon delivers them. prp authority serve --console
serves the same page from the daemon itself.

Examples:
  prp console --store sqlite:/var/lib/prp/authority --server-key-file key
  prp console protocol/fixtures/replay/happy-path.json
  prp console .prp/demo/RUN/bundle/transcript.ndjson`,
    )
    .action((file: string | undefined, opts: ConsoleCliOptions) =>
      runAction(async () => {
        let source: RunSource;
        if (file !== undefined) {
          const replay = ReplaySource.open(file);
          if (!replay.ok) throw refusal(replay.error);
          source = replay.value;
        } else source = await storeSource(opts);
        const server = await startConsole(source, opts.listen, { pollMs: opts.pollMs, ...(opts.bundlesDir ? { bundlesDir: opts.bundlesDir } : {}) });
        await untilStopped();
        await server.close();
        return 0;
      }),
    );
}
