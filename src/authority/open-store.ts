import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { StateError } from "../storage/private-sqlite.js";
import { STORE_FILE } from "./limits.js";
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
    if (directory === "")
      throw new StateError(
        "store_location_invalid",
        text,
        "sqlite: needs the store's directory, e.g. sqlite:/var/lib/prp/authority",
      );
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
export const describeStore = (location: StoreLocation): string =>
  location.kind === "sqlite" ? `sqlite:${location.directory}` : location.display;

export interface OpenStoreOptions {
  serverKey: ServerKey;
  /** See SqliteStoreOptions.adoptServerKey: for a key change, once. */
  adoptServerKey?: boolean;
  /** The store's diagnostics for a person (PostgreSQL: its notice connection lost and regained). */
  log?: (text: string) => void;
  /**
   * Make a store that is not there yet (a SQLite file, or the schema in a PostgreSQL database):
   * only for commands that start one (the daemon, a run's creation). Without it a missing store
   * is refused (`store_missing`), so that a mistyped --store is said, not answered with an
   * empty store made there.
   */
  create?: boolean;
}

/**
 * Opens the store at `location`. Throws StateError when it must be refused: the store's own
 * refusals (a symlink, a wrong mode, a wrong server key, an unknown schema…), or
 * `store_unreachable` when a PostgreSQL server does not answer (named without its password).
 */
export async function openAuthorityStore(location: StoreLocation, options: OpenStoreOptions): Promise<AuthorityStore> {
  const common = { serverKey: options.serverKey, adoptServerKey: options.adoptServerKey === true };
  if (location.kind === "sqlite") {
    if (options.create !== true && !existsSync(join(location.directory, STORE_FILE))) {
      throw new StateError(
        "store_missing",
        describeStore(location),
        "no store here: prp authority serve or prp authority run create makes one; check --store",
      );
    }
    return SqliteAuthorityStore.open(location.directory, common);
  }
  // Loaded only for PostgreSQL: pg probes for Cloudflare Workers at load time with `new Response`,
  // which instantiates undici's WebAssembly parser, too costly for every other command (and
  // refused outright under an address-space cap: test/cli/bounded-input.test.ts).
  const { PostgresAuthorityStore } = await import("./postgres-store.js");
  try {
    return await PostgresAuthorityStore.open(location.url, {
      ...common,
      mustExist: options.create !== true,
      ...(options.log ? { log: options.log } : {}),
    });
  } catch (err) {
    if (err instanceof StateError) throw err;
    throw new StateError(
      "store_unreachable",
      location.display,
      `the PostgreSQL store cannot be opened: ${withoutPassword((err as Error)?.message ?? String(err), location)}`,
    );
  }
}

/** A driver's message with the URL and its password, in either spelling, replaced. */
function withoutPassword(message: string, location: Extract<StoreLocation, { kind: "postgres" }>): string {
  let text = message.replaceAll(location.url, location.display);
  const password = new URL(location.url).password;
  for (const secret of new Set([password, safeDecode(password)]))
    if (secret !== "") text = text.replaceAll(secret, "***");
  return text;
}

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};
