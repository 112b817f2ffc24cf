import type { Command } from "commander";
import type { AuthorityError } from "../authority/errors.js";
import { openAuthorityStore, parseStoreLocation, type StoreLocation } from "../authority/open-store.js";
import type { ServerKey } from "../authority/server-key.js";
import { readServerKeyFile, SERVER_KEY_ENV, serverKeyFromEnvironment } from "../authority/server-key-source.js";
import type { AuthorityStore } from "../authority/store.js";
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
    .option("--store <location>", "the authority's store: sqlite:DIR (one machine) or postgres://USER@HOST/DB (several instances)", DEFAULT_STORE)
    .option("--server-key-file <path>", `the server key the store's credentials are sealed under (64 hex digits, mode 600); or set ${SERVER_KEY_ENV}. Make one with: prp authority key --out FILE`);
}

/** The exit status of a refusal of what was asked (unknown run, bad payload); 2 is for a bad invocation or configuration. */
export const REFUSED = 1;
export const MISCONFIGURED = 2;

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
  throw new CliFailure(`server_key_missing: the authority needs its server key: pass --server-key-file FILE or set ${SERVER_KEY_ENV}; make one with \`prp authority key --out FILE\` (keep it apart from the store and its backups)`, MISCONFIGURED);
}

export function storeLocation(opts: StoreOptions): StoreLocation {
  try {
    return parseStoreLocation(opts.store);
  } catch (err) {
    if (err instanceof StateError) throw new CliFailure(err.message, MISCONFIGURED);
    throw err;
  }
}

/** Opens the store with the server key, runs `use`, closes the store and zeroes the key. */
export async function withStore<T>(opts: StoreOptions, use: (store: AuthorityStore) => Promise<T>): Promise<T> {
  const location = storeLocation(opts);
  const key = loadServerKey(opts);
  try {
    let store: AuthorityStore;
    try {
      store = await openAuthorityStore(location, { serverKey: key });
    } catch (err) {
      if (err instanceof StateError) throw new CliFailure(err.message, MISCONFIGURED);
      throw err;
    }
    try {
      return await use(store);
    } finally {
      await store.close();
    }
  } finally {
    key.destroy();
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
