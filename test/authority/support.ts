import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CommandQueue } from "../../src/authority/commands.js";
import { Credentials, type Authorization } from "../../src/authority/credentials.js";
import type { Result } from "../../src/authority/errors.js";
import { EventIngest, type OnCommittedEvent } from "../../src/authority/ingest.js";
import { registerRun } from "../../src/authority/runs.js";
import { ServerKey } from "../../src/authority/server-key.js";
import { SqliteAuthorityStore, type SqliteStoreOptions } from "../../src/authority/sqlite-store.js";
import type { AuthorityStore, NewCommittedEvent } from "../../src/authority/store.js";
import type { RunIdentity } from "../../src/transport/envelope.js";
import { event as sampleEvent } from "../contract/samples.js";

export const identity = (n = 1, overrides: Partial<RunIdentity> = {}): RunIdentity => ({
  runnerInstanceId: `runner_${n}`,
  environmentLeaseId: `env_${n}`,
  runId: `run_${n}`,
  normalizedSessionId: `session_${n}`,
  turnId: `turn_${n}`,
  itemId: `item_${n}`,
  ...overrides,
});

/** A clock the test moves: expiry is tested by moving it, never by waiting. */
export class Clock {
  t = Date.UTC(2026, 7, 7, 12, 0, 0);
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

/** A v1 PRP event of run n, the way its runner would send it. */
export const event = (seq: number, n = 1, overrides: Record<string, unknown> = {}): Record<string, unknown> =>
  sampleEvent(1, {
    sourceEventId: `event_runner_${n}_${String(seq).padStart(16, "0")}`,
    sourceSeq: seq,
    sourceInstanceId: `runner_${n}`,
    runId: `run_${n}`,
    normalizedSessionId: `session_${n}`,
    turnId: `turn_${n}`,
    itemId: `item_${n}`,
    payload: { text: `delta ${seq}` },
    ...overrides,
  });

/** An envelope as the store commits it: its seq, id, type and priority beside its text. */
export const committedRow = (e: Record<string, unknown>): NewCommittedEvent => ({
  sourceSeq: e.sourceSeq as number,
  sourceEventId: e.sourceEventId as string,
  eventType: e.eventType as string,
  priority: e.priority as number,
  envelope: JSON.stringify(e),
});

export const unwrap = <T>(result: Result<T>): T => {
  if (!result.ok) throw new Error(`expected ok, got ${result.error.code}: ${result.error.message}`);
  return result.value;
};

export const codeOf = (result: Result<unknown>): string | null => (result.ok ? null : result.error.code);

export interface Authority {
  dir: string;
  store: AuthorityStore;
  clock: Clock;
  credentials: Credentials;
  ingest: EventIngest;
  commands: CommandQueue;
  committed: Array<{ runId: string; sourceEventId: string }>;
}

/** This test process's server key: every store a test opens, and opens again, is sealed under it. */
export const serverKey = ServerKey.generate();

export const openStore = (dir: string, options: Omit<SqliteStoreOptions, "serverKey"> = {}): SqliteAuthorityStore =>
  SqliteAuthorityStore.open(dir, { serverKey, ...options });

/** The transport-independent parts over one store, as an authority process holds them. */
export function authority(
  dir: string,
  options: { clock?: Clock; onCommittedEvent?: OnCommittedEvent; store?: AuthorityStore } = {},
): Authority {
  const clock = options.clock ?? new Clock();
  const store = options.store ?? openStore(dir);
  const committed: Authority["committed"] = [];
  const onCommittedEvent: OnCommittedEvent =
    options.onCommittedEvent ?? ((e, ctx) => void committed.push({ runId: ctx.runId, sourceEventId: e.sourceEventId }));
  return {
    dir,
    store,
    clock,
    credentials: unwrap(Credentials.create({ store, now: clock.now })),
    ingest: new EventIngest({ store, onCommittedEvent, now: clock.now }),
    commands: new CommandQueue({ store, now: clock.now }),
    committed,
  };
}

export async function withRun(a: Authority, n = 1, protocolVersion?: number): Promise<void> {
  unwrap(
    await registerRun(a.store, identity(n), { now: a.clock.now, ...(protocolVersion ? { protocolVersion } : {}) }),
  );
}

/** A runner authenticating with a fresh ticket, the transport's proof check taken as passed. */
export async function connect(a: Authority, runId = "run_1", selectedVersion = 3): Promise<Authorization> {
  const ticket = unwrap(await a.credentials.issueBootstrapTicket(runId));
  const record = (await a.credentials.lookupCredential(ticket.credentialId))!;
  return unwrap(await a.credentials.reauthorize({ record, selectedVersion, proofVerified: true }));
}

export function tempRoot(prefix: string): { dir: () => string; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  let n = 0;
  return { dir: () => join(root, `state-${++n}`), cleanup: () => rmSync(root, { recursive: true, force: true }) };
}
