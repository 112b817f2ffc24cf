import { statfsSync } from "node:fs";
import type { Command } from "commander";
import type { AuthorityError } from "../authority/errors.js";
import {
  describeStore,
  openAuthorityStore,
  parseStoreLocation,
  type OpenStoreOptions,
  type StoreLocation,
} from "../authority/open-store.js";
import type { ServerKey } from "../authority/server-key.js";
import { readServerKeyFile, SERVER_KEY_ENV, serverKeyFromEnvironment } from "../authority/server-key-source.js";
import type { AuthorityStore } from "../authority/store.js";
import { driverCode, storeFailureKind } from "../authority/store-failure.js";
import { StateError } from "../storage/private-sqlite.js";

/** The store every authority command uses unless told otherwise. */
export const DEFAULT_STORE = "sqlite:.prp/authority";

export interface StoreOptions {
  store: string;
  serverKeyFile?: string;
}

/** `--store` and `--server-key-file`, the same on the daemon and on every admin command. */
export function withStoreOptions(command: Command): Command {
  return command
    .option(
      "--store <location>",
      "the authority's store: sqlite:DIR (one machine) or postgres://USER@HOST/DB (several instances)",
      DEFAULT_STORE,
    )
    .option(
      "--server-key-file <path>",
      `the server key the store's credentials are sealed under (64 hex digits, mode 600); or set ${SERVER_KEY_ENV}. Make one with: prp authority key --out FILE`,
    );
}

/** The exit status of a refusal of what was asked (unknown run, bad payload); 2 is for a bad invocation or configuration. */
export const REFUSED = 1;
export const MISCONFIGURED = 2;
/** The store could not do what was asked (a full disk, a read-only file): nothing asked was refused, it may be run again. */
export const STORE_FAILED = 1;

/** A failure the command reports and exits on: a message a person can act on, and its status. */
export class CliFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = "CliFailure";
  }
}

export const refusal = (error: AuthorityError | { code: string; path: string; message: string }): CliFailure =>
  new CliFailure(`${error.code}${error.path ? ` at ${error.path}` : ""}: ${error.message}`, REFUSED);

/**
 * The server key from `--server-key-file`, else from the environment; with neither, the
 * authority refuses to start (`server_key_missing`) and says how to make one.
 */
export function loadServerKey(opts: StoreOptions, env: NodeJS.ProcessEnv = process.env): ServerKey {
  try {
    if (opts.serverKeyFile !== undefined) return readServerKeyFile(opts.serverKeyFile);
    if (env[SERVER_KEY_ENV] !== undefined) return serverKeyFromEnvironment(env);
  } catch (err) {
    if (err instanceof StateError) throw new CliFailure(err.message, MISCONFIGURED);
    throw err;
  }
  throw new CliFailure(
    `server_key_missing: the authority needs its server key: pass --server-key-file FILE or set ${SERVER_KEY_ENV}; make one with \`prp authority key --out FILE\` (keep it apart from the store and its backups)`,
    MISCONFIGURED,
  );
}

export function storeLocation(opts: StoreOptions): StoreLocation {
  try {
    return parseStoreLocation(opts.store);
  } catch (err) {
    if (err instanceof StateError) throw new CliFailure(err.message, MISCONFIGURED);
    throw err;
  }
}

/**
 * Opens the store with the server key, runs `use`, closes the store and zeroes the key. A store
 * that is not there is refused unless `create` (only commands that start a store pass it).
 */
export async function withStore<T>(
  opts: StoreOptions,
  use: (store: AuthorityStore) => Promise<T>,
  { create = false }: { create?: boolean } = {},
): Promise<T> {
  const location = storeLocation(opts);
  const key = loadServerKey(opts);
  try {
    const store = await openCliStore(location, { serverKey: key, create });
    try {
      return await use(store);
    } catch (err) {
      throw storeCliFailure(err, location);
    } finally {
      await store.close();
    }
  } finally {
    key.destroy();
  }
}

/** openAuthorityStore, its refusals and the database's failures as CliFailures. */
export async function openCliStore(location: StoreLocation, options: OpenStoreOptions): Promise<AuthorityStore> {
  try {
    return await openAuthorityStore(location, options);
  } catch (err) {
    throw storeCliFailure(err, location);
  }
}

const CAUSES = {
  full: "the disk is full",
  read_only: "the store refuses writes (read-only)",
  unavailable: "the store could not be used",
} as const;

/**
 * A store's refusal (StateError) or its database's failure (a full disk, a read-only file, a
 * lock) as one line naming the store and the cause; anything else is returned as it is (a bug,
 * whose stack is worth seeing).
 */
export function storeCliFailure(err: unknown, location: StoreLocation): unknown {
  if (err instanceof CliFailure) return err;
  if (err instanceof StateError) return new CliFailure(err.message, MISCONFIGURED);
  const code = driverCode(err);
  if (code === undefined) return err;
  const kind = code.startsWith("SQLITE_IOERR") && noRoomLeft(location) ? "full" : storeFailureKind(err);
  const advice =
    kind === "full"
      ? ": SQLite needs free space beside the store (its -wal and -shm files) even for a change that adds no page; free some on its filesystem and run the command again"
      : "";
  return new CliFailure(
    `store_${kind}: ${describeStore(location)}: ${CAUSES[kind]} (${code}: ${(err as Error).message}); the command did not complete${advice}`,
    STORE_FAILED,
  );
}

/** SQLite says a full disk as SQLITE_FULL, or as an I/O error when its shared-memory file cannot grow: the filesystem tells which. */
function noRoomLeft(location: StoreLocation): boolean {
  if (location.kind !== "sqlite") return false;
  try {
    return statfsSync(location.directory).bavail === 0;
  } catch {
    return false;
  }
}

/** Runs a command's action: a CliFailure is printed (`prp: …`) and becomes the exit status. */
export async function runAction(action: () => Promise<number | void>): Promise<void> {
  try {
    process.exitCode = (await action()) ?? 0;
  } catch (err) {
    if (!(err instanceof CliFailure)) throw err;
    process.stderr.write(`prp: ${err.message}\n`);
    process.exitCode = err.exitCode;
  }
}
