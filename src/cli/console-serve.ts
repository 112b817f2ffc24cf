import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { StoreLocation } from "../authority/open-store.js";
import type { AuthorityStore } from "../authority/store.js";
import type { RunSource } from "../console/run-source.js";
import { ConsoleServer } from "../console/server.js";
import { StoreSource } from "../console/store-source.js";
import { writePrivateFile } from "../storage/private-file.js";
import { isLoopback } from "../transport/loopback.js";
import {
  CliFailure,
  loadServerKey,
  MISCONFIGURED,
  openCliStore,
  storeLocation,
  type StoreOptions,
} from "./authority-options.js";

export const DEFAULT_CONSOLE_LISTEN = { host: "127.0.0.1", port: 0 };

/** Starts a console on `source`, prints its URL (stdout) and a warning for a non-loopback address (stderr). */
export async function startConsole(
  source: RunSource,
  listen: { host: string; port: number },
  options: {
    pollMs?: number;
    bundlesDir?: string;
    print?: (url: string) => void;
    commandQueued?: (runId: string) => void;
  } = {},
): Promise<ConsoleServer> {
  let server: ConsoleServer;
  try {
    server = await ConsoleServer.start({
      source,
      host: listen.host,
      port: listen.port,
      ...(options.pollMs ? { pollMs: options.pollMs } : {}),
      ...(options.bundlesDir ? { bundlesDir: options.bundlesDir } : {}),
      ...(options.commandQueued ? { commandQueued: options.commandQueued } : {}),
    });
  } catch (err) {
    await source.close();
    throw new CliFailure(`listen_failed: ${(err as Error).message}`, MISCONFIGURED);
  }
  if (!isLoopback(listen.host, { localhost: true }))
    process.stderr.write(
      `prp: warning: the console listens on ${listen.host}, not loopback: anyone who can reach it and has the URL can watch runs and send commands; it speaks plain HTTP\n`,
    );
  (options.print ?? ((url: string) => console.log(url)))(server.url);
  return server;
}

/** Where the daemon's console writes its URL: `--console-url-file`, else beside a SQLite store, else .prp/. */
export const consoleUrlFile = (location: StoreLocation, option: string | undefined): string =>
  resolve(
    option ?? (location.kind === "sqlite" ? join(location.directory, "console-url") : join(".prp", "console-url")),
  );

/**
 * Writes the console's URL, token and all, to `file` (mode 600), and returns the line a log may
 * hold: the address without the token, and where the URL is. A daemon's stdout goes to logs
 * that others read (journald, a collector); the token must not.
 */
export function publishConsoleUrl(file: string, url: string): string {
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writePrivateFile(file, `${url}\n`);
  } catch (err) {
    throw new CliFailure(
      `console_url_unwritable: cannot write the console's URL to ${file}: ${(err as Error).message}; pass --console-url-file FILE in a folder you can write`,
      MISCONFIGURED,
    );
  }
  const base = new URL(url);
  base.search = "";
  return `console: ${base.href} (its URL with the access token is in ${file}, readable by you only)`;
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
    store = await openCliStore(location, { serverKey: key });
  } catch (err) {
    key.destroy();
    throw err;
  }
  return new StoreSource(store, async () => {
    await store.close();
    key.destroy();
  });
}
