import type { AuthorityStore } from "../authority/store.js";
import type { RunSource } from "./run-source.js";

/**
 * The runs of an authority store, read beside a live daemon (as `prp events` and the admin
 * commands do); commands are queued in the store, and the daemon delivers them to the runner.
 */
export class StoreSource implements RunSource {
  readonly live = true;
  readonly writes: { store: AuthorityStore };

  constructor(
    readonly store: AuthorityStore,
    private readonly closeStore: () => Promise<void>,
  ) {
    this.writes = { store };
  }

  origin() {
    return {};
  }

  close(): Promise<void> {
    return this.closeStore();
  }
}
