import { resolve } from "node:path";
import { StateError } from "../storage/private-sqlite.js";
import type { ServerKey } from "./server-key.js";
import { SqliteAuthorityStore } from "./sqlite-store.js";
import type { AuthorityStore } from "./store.js";

/** Where an authority keeps its state, as `--store` names it. */
export type StoreLocation =
  /** The embedded default: a private directory holding the SQLite file. */
  | { kind: "sqlite"; directory: string }
  /** A PostgreSQL database, for several authority instances; `display` has no password. */
  | { kind: "postgres"; url: string; display: string };

/**
 * `sqlite:DIR` (DIR is the store's private directory, made 0700 if missing) or
 * `postgres://…` / `postgresql://…`. Anything else is refused (StateError `store_location_invalid`).
 */
export function parseStoreLocation(text: string): StoreLocation {
  if (text.startsWith("sqlite:")) {
    const directory = text.slice("sqlite:".length);
    if (directory === "") throw new StateError("store_location_invalid", text, "sqlite: needs the store's directory, e.g. sqlite:/var/lib/prp/authority");
    return { kind: "sqlite", directory: resolve(directory) };
  }
  if (/^postgres(ql)?:\/\//.test(text)) {
    let display: string;
    try {
      const url = new URL(text);
      if (url.password !== "") url.password = "***";
      display = url.href;
    } catch {
      throw new StateError("store_location_invalid", "postgres://…", "the PostgreSQL URL does not parse");
    }
    return { kind: "postgres", url: text, display };
  }
  throw new StateError("store_location_invalid", text, "--store must be sqlite:DIR or postgres://USER@HOST/DB");
}

/** The location as it may be shown in a log or an error: never a password. */
export const describeStore = (location: StoreLocation): string => (location.kind === "sqlite" ? `sqlite:${location.directory}` : location.display);

export interface OpenStoreOptions {
  serverKey: ServerKey;
  /** See SqliteStoreOptions.adoptServerKey: for a key change, once. */
  adoptServerKey?: boolean;
}

/**
 * Opens the store at `location`. Throws StateError when it must be refused: SQLite's own
 * refusals (a symlink, a wrong mode, a wrong server key…), or `store_postgres_unavailable` when
 * this build has no PostgreSQL store.
 */
export async function openAuthorityStore(location: StoreLocation, options: OpenStoreOptions): Promise<AuthorityStore> {
  if (location.kind === "sqlite") return SqliteAuthorityStore.open(location.directory, { serverKey: options.serverKey, adoptServerKey: options.adoptServerKey === true });
  throw new StateError("store_postgres_unavailable", location.display, "postgres store not available in this build: use --store sqlite:DIR");
}
