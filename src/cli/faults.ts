import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { DurableRunFacts, FaultStep } from "./durable-run.js";

export interface Fault {
  describe: string;
  steps: () => FaultStep[];
  /** Whether the run still ends with a committed terminal (a revoked runner stops before). */
  terminal?: boolean;
  /** Event types the fault must leave in the committed stream. */
  shows?: string[];
  /** The last runner process's exit code. */
  runnerExit?: number;
  /** The scenario the fault needs, unless --script names another. */
  script?: string;
  /** Overrides --delay-ms: the fault needs the run to last. */
  delayMs?: number;
  /** Relaunch a runner that exits 3, as a controller does after a lease expiry. */
  relaunchAfterLeaseExpiry?: boolean;
  /** Where the first runner kills itself, for the crash faults. */
  crashAt?: () => string;
  /** Extra prp-runnerd flags (a smaller outbox). */
  runnerArgs?: string[];
  /** The outbox limit the peak is judged against. */
  maxOutboxBytes?: number;
  /** A fault's own check of the committed stream: why it fails, or null. */
  check?: (facts: DurableRunFacts) => string | null;
}

/** The faults `prp fault` and `prp demo --fault` can inject (runtime.md §5.10), and what each does. */
export const FAULTS: Record<string, Fault> = {
  none: { describe: "no fault: the baseline run", steps: () => [] },
  "socket-drop": {
    describe: "the authority drops the connection mid-run; the runner redials with its in-memory lease and resends what is unacknowledged",
    steps: () => [{ afterEvents: 8, act: async (ctx) => ctx.authority.disconnectRunner(ctx.runId) }],
  },
  "runner-restart": {
    describe: "the runner is killed with SIGKILL at a random point — after N commits, between an outbox commit and its send, or between a journal entry and its effect — and relaunched on the same state with a fresh ticket",
    steps: () => [{ afterEvents: 4 + Math.floor(Math.random() * 10), act: (ctx) => ctx.restartRunner() }],
  },
  "crash-after-commit": {
    describe: "the runner SIGKILLs itself between committing an event to its outbox and sending it; the replacement sends it",
    steps: () => [],
    crashAt: () => `after-commit:${3 + Math.floor(Math.random() * 12)}`,
  },
  "crash-after-journal": {
    describe: "the runner SIGKILLs itself between journaling a command and its effect; the command becomes indeterminate and never runs",
    steps: () => [],
    crashAt: () => `after-journal:${1 + Math.floor(Math.random() * 3)}`,
  },
  "duplicate-command": {
    describe: "the authority delivers the pending command a second time; the runner replays its result with no second effect",
    steps: () => [1, 5, 8].map((n) => ({ afterEvents: n, act: async (ctx) => void (await ctx.authority.redeliverPendingCommand(ctx.runId)) })),
  },
  "lost-ack": {
    describe: "the authority commits an event but loses its ACK with the connection; the runner redials, learns the cursor from the welcome and resends only what is unacknowledged",
    steps: () => [{ afterEvents: 7, act: async (ctx) => ctx.authority.dropNextAck(ctx.runId) }],
  },
  drain: {
    describe: "runner.drain mid-run: the runner reports runner.draining, finishes the turn it has, and refuses a new turn with no effect",
    steps: () => [{ afterEvents: 9, act: async (ctx) => {
      await ctx.authority.queueCommand(ctx.runId, "runner.drain", {});
      await ctx.authority.queueCommand(ctx.runId, "turn.start", { text: "a turn after drain: refused" });
    } }],
    shows: ["runner.draining"],
  },
  revoke: {
    describe: "the authority revokes the run's credentials: the runner flushes its outbox on the open connection and stops, exit 3, with its state intact",
    // linger waits for an interrupt that never comes, so the run is still going when the revoke lands.
    script: "linger",
    steps: () => [{ afterEvents: 11, act: async (ctx) => void (await ctx.authority.revoke(ctx.runId)) }],
    terminal: false,
    runnerExit: 3,
  },
  "harness-restart": {
    describe: "the harness's process group is killed mid-turn: the runner reports its exit, starts a second harness that resumes where the first stopped, and reports harness.ready and session.reconciled",
    steps: () => [{ afterEvents: 12, act: async (ctx) => {
      const ready = ctx.committed().find((e) => e.eventType === "harness.ready");
      const pid = (ready?.payload as { pid?: number } | undefined)?.pid;
      if (pid) process.kill(-pid, "SIGKILL");
    } }],
    // A delay keeps the first harness running until the kill lands.
    delayMs: 500,
    shows: ["session.reconciled"],
    check: (facts) => (facts.events.filter((e) => e.eventType === "harness.ready").length === 2 ? null : "expected a second harness.ready"),
  },
  suspend: {
    describe: "runner.suspend mid-turn: runner.suspending, the harness group ended, runner.suspended; once the authority acknowledges the result the runner stops with no terminal, its state kept for a resume",
    script: "linger",
    steps: () => [{ afterEvents: 11, act: async (ctx) => void (await ctx.authority.queueCommand(ctx.runId, "runner.suspend", {})) }],
    terminal: false,
    shows: ["runner.suspending", "runner.suspended"],
    runnerExit: 0,
  },
  "lease-expiry": {
    describe: "the lease expires while the runner is disconnected: it exits 3 with its state intact and is relaunched with a new ticket, which resumes it",
    steps: () => [{ afterEvents: 9, act: async (ctx) => {
      ctx.advanceAuthorityClock(24 * 60 * 60 * 1000 + 1000); // past any lease TTL (at most 24 h)
      ctx.authority.disconnectRunner(ctx.runId);
    } }],
    relaunchAfterLeaseExpiry: true,
    check: (facts) => (facts.runnerExits[0]?.exitCode === 3 && facts.runnerExits.length === 2 ? null : `expected a runner that exits 3 and a relaunched one; exits were ${JSON.stringify(facts.runnerExits)}`),
  },
  "storage-pressure": {
    describe: "250 small deltas into a 16 KiB outbox: they are coalesced, and the outbox never passes its limit",
    script: "storage-pressure",
    steps: () => [],
    runnerArgs: ["--max-outbox-bytes", "16384", "--p0-reserve-bytes", "4096"],
    maxOutboxBytes: 16_384,
    check: (facts) => {
      const deltas = facts.events.filter((e) => e.eventType === "item.delta");
      const carried = deltas.reduce((n, e) => n + ((e.payload as { coalescedDeltas?: number }).coalescedDeltas ?? 1), 0);
      if (carried !== 250) return `the committed deltas carry ${carried} of the 250 updates`;
      return deltas.length < 250 ? null : "the deltas were not coalesced";
    },
  },
  "malformed-input": {
    describe: "the authority sends a command that breaks the contract; the runner refuses it and the run goes on",
    steps: () => [{ afterEvents: 6, act: async (ctx) => void ctx.authority.sendRawCommand(ctx.runId, { commandId: "command_malformed", controllerSeq: 99, type: "no.such.command" }) }],
  },
};

/** What a fault run must show (issue 5): nothing acknowledged lost, nothing twice, one effect per command, bounded, no secret. */
export interface FaultVerdict {
  fault: string;
  passed: boolean;
  acknowledgedLost: number;
  duplicateLogicalEvents: number;
  commandEffects: number;
  peakOutboxBytes: number;
  secretsFound: number;
}

/** Each accepted command's effect shows as exactly one of these events. */
const EFFECT_EVENTS = ["workspace.ready", "session.starting", "turn.submitted"];
const ONCE_PER_RUN = new Set([...EFFECT_EVENTS, "harness.starting", "run.terminal"]);

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

export function judgeFault(fault: string, facts: DurableRunFacts): FaultVerdict {
  const expected = FAULTS[fault]!;
  const seqs = facts.events.map((e) => e.sourceSeq);
  const highest = Math.max(0, ...seqs);
  const acknowledgedLost = highest - new Set(seqs).size;
  const ids = facts.events.map((e) => e.sourceEventId);
  const counts = new Map<string, number>();
  for (const e of facts.events) counts.set(e.eventType, (counts.get(e.eventType) ?? 0) + 1);
  const duplicateLogicalEvents = ids.length - new Set(ids).size + [...ONCE_PER_RUN].reduce((n, t) => n + Math.max(0, (counts.get(t) ?? 0) - 1), 0);
  const commandEffects = Math.max(0, ...EFFECT_EVENTS.map((t) => counts.get(t) ?? 0));
  let peakOutboxBytes = 0;
  const statePath = join(facts.dir, "runner-state", "runner-state.sqlite");
  if (existsSync(statePath)) {
    const db = new Database(statePath, { readonly: true, fileMustExist: true });
    peakOutboxBytes = (db.prepare("SELECT peak_outbox_bytes AS p FROM runner_state WHERE id = 1").get() as { p: number } | undefined)?.p ?? 0;
    db.close();
  }
  const haystacks = [...filesUnder(facts.dir).map((f) => readFileSync(f).toString("latin1")), facts.runnerLogs.flat().join("\n"), JSON.stringify(facts.events)];
  const secretsFound = facts.tickets.filter((t) => haystacks.some((h) => h.includes(t))).length;
  const terminalAsExpected = facts.events.some((e) => e.eventType === "run.terminal") === (expected.terminal ?? true);
  const shown = (expected.shows ?? []).every((t) => counts.has(t));
  const exitAsExpected = expected.runnerExit === undefined || facts.runnerExits.at(-1)?.exitCode === expected.runnerExit;
  return {
    fault,
    passed: terminalAsExpected && shown && exitAsExpected && (expected.check?.(facts) ?? null) === null && acknowledgedLost === 0 && duplicateLogicalEvents === 0 && commandEffects <= 1 && peakOutboxBytes <= (expected.maxOutboxBytes ?? 16 * 1024 * 1024) && secretsFound === 0,
    acknowledgedLost,
    duplicateLogicalEvents,
    commandEffects,
    peakOutboxBytes,
    secretsFound,
  };
}
