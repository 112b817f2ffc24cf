import type * as T from "../contract/generated/types.js";
import type { PrpEvent } from "../contract/kinds.js";
import type { Script, Step } from "../harness/fake-harness.js";
import type { FaultContext, FaultStep } from "./durable-run.js";
import { describeKillPoint, drawKillPoint, KILL_KINDS, killPlan, type KillPoint } from "./kill-points.js";
import { harnessItemId } from "./script-delivery.js";
import { SIGNAL_FAULTS } from "./signal-faults.js";
import type { Fault, FaultPlan } from "./fault-plan.js";

const fixed =
  (steps: FaultStep[]): (() => FaultPlan) =>
  () => ({ steps });

/**
 * The first event the script's harness reports, when a delay step follows it, as a matcher on
 * committed events (type and the harness's item id). Once it is committed the harness still
 * has that delay (the fault's 500 ms) and whatever comes before it to play, so a kill then
 * lands on a live harness whatever the script's length. The first event, not the one just
 * before the delay: a script that streams many events first (many-items) keeps the runner's
 * outbox behind its harness, and a late event's commit could come after the delay had passed.
 */
function firstEventBeforeADelay(script: Script): ((event: PrpEvent) => boolean) | null {
  let first: T.EventStep | null = null;
  for (const step of script.steps as Step[]) {
    if (step.kind === "exit") break;
    if (step.kind === "delay" && first) {
      const { event_type: type, item_id: itemId } = first;
      return (event) => event.eventType === type && harnessItemId(event) === itemId;
    }
    if (step.kind === "event") first ??= step as T.EventStep;
  }
  return null;
}

/** SIGKILLs the first harness's process group (its pid from harness.ready). */
async function killHarness(ctx: FaultContext): Promise<void> {
  const ready = ctx.committed().find((e) => e.eventType === "harness.ready");
  const pid = (ready?.payload as { pid?: number } | undefined)?.pid;
  try {
    if (pid) process.kill(-pid, "SIGKILL");
  } catch {
    ctx.note(`the harness (group ${pid}) had already ended: nothing to kill`); // the fault's check then fails
  }
}

const HARNESS_RESTART_SCRIPT =
  "harness-restart needs a script whose harness reports an event and then waits (a delay step), so that the kill lands on a running harness; happy-path has one";

function killAt(point: KillPoint): FaultPlan {
  return { ...killPlan(point), chosen: describeKillPoint(point) };
}

const crashFault = (kind: "after-commit" | "after-journal", describe: string): Fault => ({
  describe,
  plan: ({ random, at }) => killAt(at === undefined ? drawKillPoint(random, kind) : { kind, at }),
  takesAt: true,
  cutsHarnessShort: true,
  killsRunner: true,
});

/** The faults `prp fault` and `prp demo --fault` can inject (runtime.md §5.10), and what each does. */
export const FAULTS: Record<string, Fault> = {
  none: { describe: "no fault: the baseline run", plan: fixed([]) },
  "socket-drop": {
    describe:
      "the authority drops the connection mid-run; the runner redials with its in-memory lease and resends what is unacknowledged",
    plan: fixed([{ afterEvents: 8, act: async (ctx) => ctx.authority.disconnectRunner(ctx.runId) }]),
  },
  "runner-restart": {
    describe:
      "the runner is SIGKILLed at a seeded point — after its outbox commits event N, after it journals command N, or once the authority has committed N events — and relaunched on the same state with a fresh ticket: runner.reconciled, then a failed terminal (its harness ended with it)",
    plan: ({ random }) => killAt(drawKillPoint(random, KILL_KINDS[random.int(0, KILL_KINDS.length - 1)]!)),
    cutsHarnessShort: true,
    killsRunner: true,
  },
  "crash-after-commit": crashFault(
    "after-commit",
    "the runner SIGKILLs itself between committing event N to its outbox and sending it (seeded, or --at N); the replacement sends it, once",
  ),
  "crash-after-journal": crashFault(
    "after-journal",
    "the runner SIGKILLs itself between journaling command N and its effect (seeded, or --at N); the command becomes indeterminate and never runs",
  ),
  "duplicate-command": {
    describe:
      "the authority delivers the pending command a second time; the runner replays its result with no second effect",
    plan: fixed(
      [1, 5, 8].map((n) => ({
        afterEvents: n,
        act: async (ctx) => void (await ctx.authorityFaults.redeliverPendingCommand(ctx.runId)),
      })),
    ),
  },
  "lost-ack": {
    describe:
      "the authority commits an event but loses its ACK with the connection; the runner redials, learns the cursor from the welcome and resends only what is unacknowledged",
    plan: fixed([{ afterEvents: 7, act: async (ctx) => ctx.authorityFaults.dropNextAck(ctx.runId) }]),
  },
  drain: {
    describe:
      "runner.drain mid-turn: the runner reports runner.draining and refuses a new turn with no effect; the turn it has goes on until it is interrupted",
    // linger waits for an interrupt, so the drain always lands mid-turn, however slow the machine.
    script: "linger",
    plan: fixed([
      {
        afterEvents: 11,
        act: async (ctx) => {
          await ctx.authority.queueCommand(ctx.runId, "runner.drain", {});
          await ctx.authority.queueCommand(ctx.runId, "turn.start", { text: "a turn after drain: refused" });
          await ctx.authority.queueCommand(ctx.runId, "turn.interrupt", { reason: "end the drained turn" });
        },
      },
    ]),
    shows: ["runner.draining"],
  },
  revoke: {
    describe:
      "the authority revokes the run's credentials: the runner flushes its outbox on the open connection and stops, exit 3, with its state intact",
    // linger waits for an interrupt that never comes, so the run is still going when the revoke lands.
    script: "linger",
    plan: fixed([{ afterEvents: 11, act: async (ctx) => void (await ctx.authority.revoke(ctx.runId)) }]),
    terminal: false,
    cutsHarnessShort: true,
    runnerExit: 3,
  },
  "harness-restart": {
    describe:
      "the harness's process group is killed mid-turn: the runner reports its exit, starts a second harness that resumes where the first stopped, and reports harness.ready and session.reconciled",
    refusesScript: (script) =>
      firstEventBeforeADelay(script) ? null : `${HARNESS_RESTART_SCRIPT}, "${script.name}" has none`,
    plan: ({ script }) => {
      const afterEvent = script && firstEventBeforeADelay(script);
      if (!afterEvent) throw new Error(HARNESS_RESTART_SCRIPT);
      return { steps: [{ afterEvents: 0, afterEvent, act: killHarness }] };
    },
    // A delay keeps the first harness running until the kill lands.
    delayMs: 500,
    shows: ["session.reconciled"],
    check: (facts) =>
      facts.events.filter((e) => e.eventType === "harness.ready").length === 2
        ? null
        : "expected a second harness.ready",
  },
  suspend: {
    describe:
      "runner.suspend mid-turn: runner.suspending, the harness group ended, runner.suspended; once the authority acknowledges the result the runner stops with no terminal, its state kept for a resume",
    script: "linger",
    plan: fixed([
      { afterEvents: 11, act: async (ctx) => void (await ctx.authority.queueCommand(ctx.runId, "runner.suspend", {})) },
    ]),
    terminal: false,
    cutsHarnessShort: true,
    shows: ["runner.suspending", "runner.suspended"],
    runnerExit: 0,
  },
  "lease-expiry": {
    describe:
      "the lease expires while the runner is disconnected: it exits 3 with its state intact and is relaunched with a new ticket, which resumes it",
    plan: fixed([
      {
        afterEvents: 9,
        act: async (ctx) => {
          ctx.advanceAuthorityClock(24 * 60 * 60 * 1000 + 1000); // past any lease TTL (at most 24 h)
          ctx.authority.disconnectRunner(ctx.runId);
        },
      },
    ]),
    relaunchAfterLeaseExpiry: true,
    check: (facts) =>
      facts.runnerExits[0]?.exitCode === 3 && facts.runnerExits.length === 2
        ? null
        : `expected a runner that exits 3 and a relaunched one; exits were ${JSON.stringify(facts.runnerExits)}`,
  },
  "storage-pressure": {
    describe:
      "a 16 KiB outbox: 250 small deltas are coalesced into fewer events; with a longer script (--script many-items) the outbox fills, the harness is paused until ACKs free room, and every event is still delivered once; the outbox never passes its limit",
    script: "storage-pressure",
    plan: fixed([]),
    runnerArgs: ["--max-outbox-bytes", "16384", "--p0-reserve-bytes", "4096"],
    maxOutboxBytes: 16_384,
    // That every delta's text arrives, once and in order, is the script check; this is the coalescing.
    check: (facts) => {
      const deltas = facts.events.filter((e) => e.eventType === "item.delta").length;
      return deltas < 250 ? null : `the 250 deltas arrived as ${deltas} events: not coalesced`;
    },
  },
  "malformed-input": {
    describe: "the authority sends a command that breaks the contract; the runner refuses it and the run goes on",
    plan: fixed([
      {
        afterEvents: 6,
        act: async (ctx) =>
          void ctx.authorityFaults.sendRawCommand(ctx.runId, {
            commandId: "command_malformed",
            controllerSeq: 99,
            type: "no.such.command",
          }),
      },
    ]),
  },
  ...SIGNAL_FAULTS,
};
