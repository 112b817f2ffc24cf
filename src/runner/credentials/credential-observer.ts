import { watch as fsWatch } from "node:fs";
import { dirname } from "node:path";
import { systemTimers, type Timers } from "../../transport/timers.js";
import { lookAtCredentialFile } from "./credential-file.js";
import type { CredentialStore } from "./credential-store.js";
import { credentialsUpdated, HARNESS_AUTH_BINDING, type CredentialsUpdatedPayload } from "./credentials-event.js";

/** The polling fallback of runtime.md §13.1: a change the directory watch missed is seen within this. */
export const CREDENTIAL_POLL_MS = 1_000;

/** Where a harness keeps the credential the runner observes (`--credential-file`, `--credential-provider`). */
export interface CredentialSource {
  /** The harness provider the event names, e.g. `codex`. */
  provider: string;
  /** The credential file, e.g. `$CODEX_HOME/auth.json`. Never reported. */
  path: string;
}

/** Watches a directory, not recursively; null when it cannot (the poll then carries on alone). */
export type DirectoryWatch = (dir: string, onChange: () => void) => { close(): void } | null;

export interface CredentialObserverOptions extends CredentialSource {
  store: CredentialStore;
  bindingId?: string;
  /** The poll's clock; tests move it instead of waiting. */
  timers?: Timers;
  watch?: DirectoryWatch;
  /** Reports a change: the event to emit, with the same identity until the sink admits it. */
  emit(payload: CredentialsUpdatedPayload): void;
  /** A new revision is committed with its baseline, before its event is emitted (the runner-restart fault's kill point). */
  recorded?(revision: number): void;
}

/** fs.watch on the directory, so that an atomic replacement (write elsewhere, rename over) is seen too. */
export const watchDirectory: DirectoryWatch = (dir, onChange) => {
  try {
    const watcher = fsWatch(dir, { persistent: false, recursive: false }, () => onChange());
    watcher.on("error", () => watcher.close()); // the directory went away: the poll carries on
    return watcher;
  } catch {
    return null;
  }
};

/**
 * The harness credential observer (runtime.md §13.1): a non-recursive watch of the directory
 * that holds the credential file, plus a one-second poll. The first valid file sets the
 * baseline and claims nothing; a later valid file with another fingerprint (a refresh, another
 * account) is a new revision of the binding, committed with its baseline and as pending in one
 * step, then emitted. Files that are absent, partly written or not a JSON object, and rewrites
 * of the same content, change nothing. A change seen while an event is still pending only moves
 * the baseline: that event covers it (changes between observations may coalesce).
 */
export class CredentialObserver {
  private readonly bindingId: string;
  private readonly timers: Timers;
  private cancelPoll: (() => void) | null = null;
  private watcher: { close(): void } | null = null;
  private stopped = false;

  constructor(private readonly options: CredentialObserverOptions) {
    this.bindingId = options.bindingId ?? HARNESS_AUTH_BINDING;
    this.timers = options.timers ?? systemTimers;
  }

  /** Opts the binding in, re-emits an event a previous runner left pending, then looks and keeps looking. */
  start(): void {
    const o = this.options;
    o.store.optIn(this.bindingId, o.provider);
    const binding = o.store.load(this.bindingId)!;
    if (binding.pending !== null) o.emit(credentialsUpdated(binding.provider, this.bindingId, binding.pending));
    this.check();
    this.watcher = (o.watch ?? watchDirectory)(dirname(o.path), () => this.check());
    this.poll();
  }

  /** One look at the file (the watch, the poll, and the turn-end and close boundaries call it). */
  check(): void {
    if (this.stopped) return;
    const look = lookAtCredentialFile(this.options.path);
    if (look.kind !== "valid") return;
    const store = this.options.store;
    const b = store.load(this.bindingId);
    if (!b || b.baseline === look.fingerprint) return;
    if (b.baseline === null || b.pending !== null)
      return store.record(this.bindingId, { baseline: look.fingerprint, revision: b.revision, pending: b.pending });
    const revision = b.revision + 1;
    store.record(this.bindingId, { baseline: look.fingerprint, revision, pending: revision });
    this.options.recorded?.(revision);
    this.options.emit(credentialsUpdated(b.provider, this.bindingId, revision));
  }

  stop(): void {
    this.stopped = true;
    this.cancelPoll?.();
    this.watcher?.close();
  }

  private poll(): void {
    this.cancelPoll = this.timers.after(CREDENTIAL_POLL_MS, () => {
      this.check();
      if (!this.stopped) this.poll();
    });
  }
}
