/**
 * One observed binding's record (runtime.md §13.1 persistence): the baseline fingerprint, the
 * binding's last revision, and the revision whose event the outbox has not admitted yet.
 */
export interface CredentialBinding {
  provider: string;
  revision: number;
  /** The fingerprint of the last valid credential file seen; null before the first. */
  baseline: string | null;
  /** The revision of the event decided but not yet admitted by the sink; null when none. */
  pending: number | null;
}

/** Where the observer keeps its bindings: in memory (local mode) or the runner's state (durable). */
export interface CredentialStore {
  /** The binding, or null when the host never opted in for it. */
  load(bindingId: string): CredentialBinding | null;
  /** The host opted in (run.prepare `observeCredentials: true`): the binding exists from now on. */
  optIn(bindingId: string, provider: string): void;
  /** Baseline, revision and pending event together, in one transaction. */
  record(bindingId: string, change: Omit<CredentialBinding, "provider">): void;
  /** The sink admitted the event of `revision`: it is no longer pending. */
  admitted(bindingId: string, revision: number): void;
}

/** Local mode: the bindings live as long as the runner process. */
export function memoryCredentialStore(): CredentialStore {
  const bindings = new Map<string, CredentialBinding>();
  return {
    load: (bindingId) => {
      const b = bindings.get(bindingId);
      return b ? { ...b } : null;
    },
    optIn: (bindingId, provider) => {
      if (!bindings.has(bindingId)) bindings.set(bindingId, { provider, revision: 0, baseline: null, pending: null });
    },
    record: (bindingId, change) => {
      const b = bindings.get(bindingId);
      if (b) bindings.set(bindingId, { ...b, ...change });
    },
    admitted: (bindingId, revision) => {
      const b = bindings.get(bindingId);
      if (b?.pending === revision) b.pending = null;
    },
  };
}
