import { join } from "node:path";
import { semanticToolBindingError } from "../../../src/contract/fixture-bindings.js";
import { packageRoot } from "../../../src/contract/package-root.js";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import { AcpDriver, type AcpDriverOptions } from "../../../src/harness/acp/acp-driver.js";
import type { PermissionPolicy } from "../../../src/harness/acp/permissions.js";
import type { SandboxPolicy } from "../../../src/harness/sandbox/sandbox-policy.js";
import { probeSandbox } from "../../../src/harness/sandbox/sandbox-probe.js";
import { LocalRunner } from "../../../src/runner/local-runner.js";
import { parseStreamRecord, type CommandReceipt } from "../../../src/runner/stream.js";
import { within } from "../../support/within.js";

export const testAgentCommand = (scenario: string): string =>
  `${process.execPath} ${join(packageRoot(), "dist/src/harness/acp/test-agent-process.js")} --scenario ${scenario}`;

export interface DriveOptions {
  policy?: PermissionPolicy;
  /** Sent once the first runtime_request.created arrives (before any answer). */
  onFirstRequest?: "turn.interrupt" | "run.cancel";
  /**
   * request.resolve resolutions, in the order requests are created; when the runner rejects one,
   * the next is sent for the same request.
   */
  answers?: Record<string, unknown>[];
  /** Sent once the first item.delta arrives. */
  onFirstDelta?: "turn.interrupt" | "run.cancel";
  command?: string;
  env?: Record<string, string>;
  /** The agent's cwd (default /tmp). */
  cwd?: string;
  /** Each event as it arrives (debugging a run that does not end). */
  trace?: (event: PrpEvent) => void;
  /** Each event and each receipt as it arrives, with a way to send a command (a controller's own script). */
  react?: (record: PrpEvent | CommandReceipt, send: (type: string, payload: Record<string, unknown>) => void) => void;
  /** Driver options the test injects (short settle times and deadlines). */
  driver?: Partial<Pick<AcpDriverOptions, "settleMs" | "handshakeMs" | "idleMs" | "maxLineBytes">>;
  /** How long the run may take before the test fails (default 60 s). */
  timeoutMs?: number;
  /**
   * Run the agent in the harness sandbox (`--sandbox isolated`: its workspace and HOME writable).
   * Where the kernel refuses the namespaces the run fails, saying why: it never runs without.
   */
  sandbox?: boolean;
}

/**
 * The sandbox `prp run --sandbox isolated` would give the agent; the test fails, naming the
 * reason, where this machine cannot set it up: a sandboxed test never passes unsandboxed.
 */
export function isolatedSandbox(): SandboxPolicy {
  const probe = probeSandbox();
  if (!probe.ok)
    throw new Error(
      `this test runs the agent in the harness sandbox, which cannot be set up on this machine: ${probe.reason}`,
    );
  return { mode: "isolated", readable: [], writable: [], hidden: [] };
}

export interface Driven {
  events: PrpEvent[];
  /** Every line the runner wrote, as written: the run's record in local mode. */
  lines: string[];
  receipts: CommandReceipt[];
  types: string[];
  terminal: Record<string, any>;
  of(type: string): PrpEvent[];
}

/** One run of an ACP agent through the local runner, in this process; bounded. */
export async function driveAgent(scenario: string, options: DriveOptions = {}): Promise<Driven> {
  const runId = `run_${scenario.replace(/[^a-z0-9]/g, "_")}`;
  const events: PrpEvent[] = [];
  const receipts: CommandReceipt[] = [];
  const lines: string[] = [];
  const answers = [...(options.answers ?? [])];
  let seq = 0;
  let sentOnDelta = false;
  let sentOnRequest = false;
  let lastRequest: string | null = null;
  const send = (type: string, payload: Record<string, unknown>) => {
    seq++;
    runner.acceptLine(
      JSON.stringify({
        schema: "paperclip.prp.command.v1",
        commandId: `command_${seq}`,
        controllerSeq: seq,
        type,
        issuedAt: "2026-08-07T21:00:00.000Z",
        payload,
      }),
    );
  };
  const driver = new AcpDriver({
    command: options.command ?? testAgentCommand(scenario),
    cwd: options.cwd ?? "/tmp",
    permissionPolicy: options.policy ?? "ask",
    runId,
    sessionId: `session_${runId}`,
    graceMs: 200,
    settleMs: 2_000,
    ...(options.env ? { env: options.env } : {}),
    ...(options.sandbox ? { sandbox: isolatedSandbox() } : {}),
    ...options.driver,
  });
  const runner: LocalRunner = new LocalRunner(
    { driver, runId, sessionId: `session_${runId}`, runnerId: `runner_${runId}`, readyTimeoutMs: 20_000 },
    {
      write: (line) => {
        lines.push(line);
        const record = parseStreamRecord(line);
        if (!record) throw new Error(`not a stream record: ${line}`);
        if (record.kind === "receipt") {
          receipts.push(record.receipt);
          options.react?.(record.receipt, send);
          if (record.receipt.status !== "accepted")
            options.trace?.({
              eventType: `receipt ${record.receipt.status}`,
              payload: record.receipt,
            } as unknown as PrpEvent);
          if (
            record.receipt.status === "rejected" &&
            record.receipt.type === "request.resolve" &&
            lastRequest &&
            answers.length > 0
          )
            send("request.resolve", { requestId: lastRequest, resolution: answers.shift()! });
        } else {
          const e = record.event;
          events.push(e);
          options.trace?.(e);
          options.react?.(e, send);
          const payload = e.payload as Record<string, any>;
          if (e.eventType === "runtime_request.created") lastRequest = payload.request.requestId;
          if (e.eventType === "runtime_request.created" && answers.length > 0)
            send("request.resolve", { requestId: payload.request.requestId, resolution: answers.shift()! });
          if (e.eventType === "runtime_request.created" && options.onFirstRequest && !sentOnRequest) {
            sentOnRequest = true;
            send(options.onFirstRequest, { reason: "operator" });
          }
          if (e.eventType === "item.delta" && options.onFirstDelta && !sentOnDelta) {
            sentOnDelta = true;
            send(options.onFirstDelta, { reason: "operator" });
          }
        }
        return true;
      },
      onDrain: () => {},
    },
  );
  send("run.prepare", { workspace: "local" });
  send("session.open", { reuse: "new_per_run" });
  send("turn.start", { text: "Fix the failing test." });
  let terminal: Awaited<typeof runner.done>;
  try {
    terminal = await within(runner.done, options.timeoutMs ?? 60_000, `the end of ACP run ${scenario}`);
  } catch (err) {
    driver.stop(); // a run that does not end leaves no agent behind
    throw err;
  }
  // wire.md §7.4 on every transcript: each authorised call has exactly one input and one result receipt.
  const binding = semanticToolBindingError(events, { runId, normalizedSessionId: `session_${runId}` });
  if (binding)
    throw new Error(`${scenario}: the semantic receipts break the binding rule: ${binding.path}: ${binding.message}`);
  return {
    events,
    lines,
    receipts,
    types: events.map((e) => e.eventType),
    terminal: terminal as unknown as Record<string, any>,
    of: (t) => events.filter((e) => e.eventType === t),
  };
}
