import { setTimeout as sleep } from "node:timers/promises";
import type * as T from "../contract/generated/types.js";
import { stopReasonLine } from "./stop-line.js";
import { InvalidArgumentError, type Command } from "commander";
import { loadCatalog } from "../agents/catalog.js";
import type { Agent, PrpClient, Run, RunSpec } from "../client/index.js";
import { apiClient, viaApi, withApiOptions, type ApiOptions } from "./api-target.js";
import { CliFailure, MISCONFIGURED, runAction } from "./authority-options.js";
import { eventRow } from "./event-line.js";
import { parseLabels } from "./labels-option.js";
import { visible } from "./terminal-text.js";

interface SubmitOptions extends ApiOptions {
  agent?: string;
  agentCommand?: string;
  script?: string;
  prompt?: string;
  workspace?: string;
  labels?: Record<string, string>;
  priority?: number;
  idempotencyKey?: string;
  wait?: boolean;
  json?: boolean;
}

/** How often --wait asks whether the run's dispatch ended without a terminal (no event will say so). */
const DISPATCH_CHECK_MS = 1000;

function parsePriority(value: string): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value) || n < -1000 || n > 1000)
    throw new InvalidArgumentError(`expected an integer from -1000 to 1000, got "${value}"`);
  return n;
}

export function registerSubmit(program: Command): void {
  withApiOptions(
    program.command("submit").description("queue a run through the authority's API, for a worker to claim"),
  )
    .option(
      "--agent <name>",
      "a named agent of the authority's catalog (it refuses an unknown one): only a worker advertising it claims the run (label agent=NAME)",
    )
    .option("--agent-command <cmd>", "an ACP agent's command line, run by the worker's runner")
    .option("--script <name>", "a fake-harness script (by catalog name): a run with no agent")
    .option("--prompt <text>", "the first turn's text")
    .option("--workspace <name>", "run.prepare's workspace (default: default)")
    .option("--labels <k=v,…>", "labels the run carries: only a worker holding each of them claims it", parseLabels)
    .option("--priority <n>", "-1000 to 1000; higher is claimed first (default 0)", parsePriority)
    .option("--idempotency-key <key>", "a retry with the same key returns the run the first created, not a second run")
    .option("--wait", "follow the run's events until it ends; exit 0 when it succeeded, 1 otherwise")
    .option("--json", "print the run as JSON (the API's Run; with --wait, once it ended; event lines go to stderr)")
    .addHelpText(
      "after",
      `
Choose one of --agent, --agent-command and --script. Needs --api URL and --token-file F with an
API token of scope operate (prp authority token create --scope operate --out F).

Prints the run's id and where it is in the queue (queued, and why it waits; claimed by a worker).
With --wait, prints its events as prp events does until its run.terminal, or until its dispatch
ends without one (cancelled while queued, its worker lost too often, its runner exited before
the terminal), and says why.

Exit status: 0 (with --wait: the run succeeded); 1 when the API refuses the run, or with --wait
when it did not succeed; 2 for a bad command line; 130 when --wait is stopped by Ctrl-C (the
run goes on).

Examples:
  prp submit --api http://127.0.0.1:7400 --token-file op.token --script happy-path --wait
  prp submit --api https://prp.example:7400 --token-file op.token --ca-bundle-path ca.pem \\
    --agent claude --prompt "fix the failing test" --labels pool=gpu --priority 10`,
    )
    .action((opts: SubmitOptions, command: Command) =>
      runAction(async () => {
        const agent = agentOf(opts);
        if (opts.api === undefined)
          throw new CliFailure("prp submit needs --api URL and --token-file F (an operate token)", MISCONFIGURED);
        const client = apiClient(opts, command)!;
        const code = await submit(client, specOf(opts, agent), opts);
        process.stdout.write("", () => process.exit(code));
      }),
    );
}

function agentOf(opts: SubmitOptions): Agent {
  const given = [opts.agent, opts.agentCommand, opts.script].filter((v) => v !== undefined).length;
  if (given !== 1)
    throw new CliFailure("choose one of --agent NAME, --agent-command CMD and --script NAME", MISCONFIGURED);
  if (opts.agent !== undefined) {
    hintUnknownAgent(opts.agent);
    return { kind: "profile", profile: opts.agent };
  }
  if (opts.agentCommand !== undefined) return { kind: "command", command: opts.agentCommand };
  return { kind: "fake", script: opts.script! };
}

/**
 * A name this machine's catalog lacks is only noted: the authority's catalog is the one that
 * decides (it may hold a profile of its own), and refuses an unknown name itself.
 */
function hintUnknownAgent(name: string): void {
  const profiles = loadCatalog();
  if (!profiles.ok || profiles.value.some((p) => p.name === name)) return;
  process.stderr.write(
    `prp submit: note: this machine's agent catalog has no "${visible(name)}" (it has ${profiles.value.map((p) => p.name).join(", ")}); the authority's catalog decides\n`,
  );
}

function specOf(opts: SubmitOptions, agent: Agent): RunSpec {
  return {
    agent,
    ...(opts.prompt !== undefined ? { prompt: opts.prompt } : {}),
    ...(opts.workspace !== undefined ? { workspace: opts.workspace } : {}),
    ...(opts.labels !== undefined ? { labels: opts.labels } : {}),
    ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
  };
}

async function submit(client: PrpClient, spec: RunSpec, opts: SubmitOptions): Promise<number> {
  const created = await viaApi(() =>
    client.createRun(spec, opts.idempotencyKey !== undefined ? { idempotencyKey: opts.idempotencyKey } : {}),
  );
  const runId = created.run.runId;
  if (!opts.wait) {
    process.stdout.write(opts.json ? `${JSON.stringify(created)}\n` : `${runId}\n${dispatchLine(created)}\n`);
    return 0;
  }
  // With --json, stdout holds the JSON alone: the person's lines go to stderr.
  const say = (line: string) => (opts.json ? process.stderr : process.stdout).write(`${line}\n`);
  say(runId);
  say(dispatchLine(created));
  const { ended, terminal } = await follow(client, runId, say);
  if (ended === "interrupted") return 130;
  const run = await viaApi(() => client.getRun(runId));
  const { terminalState, dispatch } = run.run;
  if (terminalState === null && dispatch?.state === "ended")
    say(
      `run ${runId} ended without a terminal: ${dispatch.endReason ?? "ended"}${dispatch.endDetail ? `: ${visible(dispatch.endDetail)}` : ""}`,
    );
  else say(`run ${runId}: ${terminalState ?? "no terminal"}`);
  const stop = stopReasonLine(terminal?.stopReason);
  if (stop) say(`  ${stop}`);
  if (opts.json) process.stdout.write(`${JSON.stringify(run)}\n`);
  return terminalState === "succeeded" ? 0 : 1;
}

/** Where the run is in the queue, for a person. */
function dispatchLine(run: Run): string {
  const d = run.run.dispatch;
  if (!d) return `run ${run.run.runId}: ${run.run.state}`;
  if (d.state === "queued") return `run ${run.run.runId}: queued${d.waiting ? ` (${visible(d.waiting)})` : ""}`;
  if (d.state === "claimed")
    return `run ${run.run.runId}: claimed by ${d.workerId ?? "a runner"} (attempt ${d.attempts})`;
  return `run ${run.run.runId}: ended${d.endReason ? ` (${d.endReason})` : ""}`;
}

/**
 * Prints the run's events until its run.terminal; beside it, asks every second whether its
 * dispatch ended without a terminal (the event stream has nothing to say then).
 */
async function follow(
  client: PrpClient,
  runId: string,
  say: (line: string) => void,
): Promise<{ ended: "terminal" | "dispatch_ended" | "interrupted"; terminal?: T.PRPRunTerminal }> {
  const stop = new AbortController();
  let terminal: T.PRPRunTerminal | undefined;
  let interrupted = false;
  let dispatchEnded = false;
  const onInterrupt = () => {
    interrupted = true;
    stop.abort();
  };
  process.once("SIGINT", onInterrupt);
  const watch = (async () => {
    while (!stop.signal.aborted) {
      await sleep(DISPATCH_CHECK_MS, undefined, { signal: stop.signal }).catch(() => {});
      if (stop.signal.aborted) return;
      try {
        const { run } = await client.getRun(runId);
        if (run.dispatch?.state === "ended" && run.dispatch.endReason !== null && run.terminalState === null) {
          dispatchEnded = true;
          stop.abort();
        }
      } catch {
        // The stream reports a lasting failure; a missed check is made again next second.
      }
    }
  })();
  try {
    await viaApi(async () => {
      for await (const { seq, event } of client.follow(runId, { signal: stop.signal })) {
        say(eventRow(seq, event));
        if (event.eventType === "run.terminal") {
          terminal = event.payload as T.PRPRunTerminal;
          break;
        }
      }
    });
  } finally {
    stop.abort();
    process.off("SIGINT", onInterrupt);
    await watch;
  }
  return { ended: interrupted ? "interrupted" : dispatchEnded ? "dispatch_ended" : "terminal", terminal };
}
