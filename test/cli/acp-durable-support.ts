import assert from "node:assert/strict";
import { join } from "node:path";
import { ServerKey } from "../../src/authority/server-key.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import { agentRunnerdArgs } from "../../src/cli/agent-options.js";
import { semanticToolBindingError } from "../../src/contract/fixture-bindings.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { runDurable, type DurableRunFacts, type FaultStep } from "../../src/fault/durable-run.js";
import type { PermissionPolicy } from "../../src/harness/acp/permissions.js";
import { describeProcesses, liveGroupMembers } from "../support/processes.js";
import { until } from "../support/until.js";

/** Once an event of `type` is committed, the controller sends a command built from it. */
export const onEvent = (
  type: string,
  command: string,
  payload: (e: PrpEvent) => Record<string, unknown>,
): FaultStep => ({
  afterEvents: 1,
  act: async (ctx) => {
    await until(() => ctx.committed().some((e) => e.eventType === type), `a committed ${type}`);
    const e = ctx.committed().find((x) => x.eventType === type)!;
    await ctx.authority.queueCommand(ctx.runId, command, payload(e));
  },
});

/** One ACP agent's durable run: its command line (or its catalog name), its cwd, and what the controller does. */
export interface DurableAgent {
  command: string;
  /** prp-runnerd flags naming the agent from the catalog (`--agent NAME …`), used instead of `command`. */
  named?: string[];
  cwd: string;
  policy?: PermissionPolicy;
  faults?: FaultStep[];
  /** --agent-idle-ms */
  idleMs?: number;
  /** Extra prp-runnerd flags (e.g. a short --harness-ready-ms, which bounds the ACP handshake). */
  runnerArgs?: string[];
}

export interface DurableAgentRun {
  facts: DurableRunFacts;
  /** The run's log as the authority's store holds it once the run is over, in sourceSeq order. */
  stored: PrpEvent[];
  types: string[];
  terminal: Record<string, any>;
  payload(type: string): Record<string, any>;
  event(type: string): PrpEvent;
}

/** [turnTerminalState, runTerminalState, reconciliation.reason] of a run's terminal. */
export const states = (r: { terminal: Record<string, any> }): unknown[] => [
  r.terminal.turnTerminalState,
  r.terminal.runTerminalState,
  r.terminal.reconciliation.reason,
];

/** Every event of the run in the store's durable log (read after the authority closed it), in pages. */
async function storedLog(facts: DurableRunFacts, serverKey: ServerKey): Promise<PrpEvent[]> {
  const store = SqliteAuthorityStore.open(join(facts.dir, "authority"), { serverKey });
  try {
    const out: PrpEvent[] = [];
    for (;;) {
      const page = await store.eventLog(facts.runId, out.length, 1_000);
      if (page.length === 0) return out;
      out.push(...page.map((row) => JSON.parse(row.envelope) as PrpEvent));
    }
  } finally {
    await store.close();
  }
}

/**
 * One durable run of an ACP agent: an authority on 127.0.0.1, prp-runnerd dialling in (in its
 * default sandbox), the run's record judged from the authority's store once both are gone:
 * exactly one run.terminal and last, every event committed once and contiguous, the receipts'
 * binding rule kept, no process of the run left alive.
 */
export async function durableAgentRun(dir: string, agent: DurableAgent): Promise<DurableAgentRun> {
  const serverKey = ServerKey.generate();
  try {
    const facts = await runDurable({
      agent: {
        runnerdArgs: agent.named
          ? [...agent.named, "--permission-policy", agent.policy ?? "deny", "--agent-cwd", agent.cwd]
          : agentRunnerdArgs({
              agent: { command: agent.command },
              permissionPolicy: agent.policy ?? "deny",
              agentCwd: agent.cwd,
              ...(agent.idleMs ? { agentIdleMs: agent.idleMs } : {}),
            }),
        prompt: "Fix the failing test.",
      },
      dir,
      faults: agent.faults ?? [],
      ticketTtlMs: 60_000,
      serverKey,
      ...(agent.runnerArgs ? { runnerArgs: agent.runnerArgs } : {}),
    });
    const stored = await storedLog(facts, serverKey);
    const logs = () => `runner logs:\n${facts.runnerLogs.flat().join("\n")}`;
    const types = stored.map((e) => e.eventType);
    assert.equal(types.filter((t) => t === "run.terminal").length, 1, `one run.terminal; ${logs()}`);
    assert.equal(types.at(-1), "run.terminal");
    stored.forEach((e, i) => assert.equal(e.sourceSeq, i + 1, "each event committed once, contiguous"));
    assert.deepEqual(
      stored.map((e) => e.sourceEventId),
      facts.events.map((e) => e.sourceEventId),
      "the store holds what the authority reported committing",
    );
    const first = stored[0]!;
    assert.equal(
      semanticToolBindingError(stored, { runId: first.runId, normalizedSessionId: first.normalizedSessionId ?? "" }),
      null,
      "the authority's record keeps the receipts' binding rule (wire.md §7.4)",
    );
    for (const ready of stored.filter((e) => e.eventType === "harness.ready")) {
      const pid = (ready.payload as Record<string, number>).pid!;
      await until(
        () => liveGroupMembers(pid).length === 0,
        () => `no live process in the agent's group ${pid}: ${describeProcesses(liveGroupMembers(pid))}`,
      );
    }
    assert.deepEqual(facts.survivors, [], "no process of the run outlives it");
    return {
      facts,
      stored,
      types,
      terminal: stored.at(-1)!.payload as Record<string, any>,
      payload: (t) => stored.find((e) => e.eventType === t)!.payload as Record<string, any>,
      event: (t) => stored.find((e) => e.eventType === t)!,
    };
  } finally {
    serverKey.destroy();
  }
}
