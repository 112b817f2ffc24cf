import { join, resolve } from "node:path";
import type { Command } from "commander";
import { PrpApiError, PrpClient, type Run, type RunSpec } from "../client/index.js";
import type { PrpEvent } from "../contract/kinds.js";
import type { ServerKey } from "../authority/server-key.js";
import { agentsDir } from "../agents/agents-dir.js";
import type { SandboxFlags } from "../harness/sandbox/sandbox-policy.js";
import type { RunnerContractFlags } from "../authority/runner-contract.js";
import type { RunnerExit } from "../worker/start-claim.js";
import type { AgentChoice } from "./agent-options.js";
import { untilStopped } from "./console-serve.js";
import { reportDurableRun } from "./durable-report.js";
import { eventLine } from "./event-line.js";
import { installedAgents } from "./local-stack-agents.js";
import { startLocalStack, type LocalStack } from "./local-stack.js";
import { harnessReadyArgs } from "./options.js";
import type { RunTarget } from "./run-target.js";
import { sandboxRunnerdArgs } from "./sandbox-options.js";

export interface ConsoleDemoOptions extends RunnerContractFlags, SandboxFlags {
  /** The scenario's name (the worker's runner finds it by name), without an agent. */
  script: string;
  out: string;
  json?: boolean;
  delayMs?: number;
  protocolMax: number;
  harnessReadyMs?: number;
  runnerd?: string;
  serverKeyFile?: string;
}

/** The demo options a worker's run cannot carry: each is refused with --console rather than ignored. */
const NOT_WITH_CONSOLE: Record<string, string> = {
  credentialFile: "--credential-file",
  credentialProvider: "--credential-provider",
  agentCwd: "--agent-cwd (a run of the console's worker works in its own workspace)",
  agentEnv: "--agent-env",
  agentIdleMs: "--agent-idle-ms",
  agentModel: "--agent-model",
  permissionPolicy: "--permission-policy (with --console a person answers in the page)",
};

/** The first option given on the command line that --console cannot take, or null. */
export function consoleRefusal(command: Command): string | null {
  for (const [name, flag] of Object.entries(NOT_WITH_CONSOLE))
    if (command.getOptionValueSource(name) === "cli") return `--console does not take ${flag}`;
  return null;
}

/** How long the demo waits for its run's runner to exit once the run's terminal is committed. */
const RUNNER_EXIT_WAIT_MS = 30_000;

/**
 * `prp demo --console`: a local control plane (local-stack.ts) on <out>/demo/console, the demo's
 * run created through its API and claimed by its worker, the console's URL printed at once, the
 * run's events printed as they are committed, its report and bundle at its end; then the stack
 * serves on (runs started from the page run too) until SIGINT or SIGTERM. Exit status: the
 * demo's run's (0 succeeded, 1 otherwise), 130 when stopped before it ended.
 */
export async function runConsoleDemo(
  opts: ConsoleDemoOptions,
  target: RunTarget,
  agent: AgentChoice | undefined,
  serverKey: ServerKey | undefined,
  show: (line: string) => void,
): Promise<number> {
  const demoDir = resolve(opts.out, "demo");
  const say = (line: string) => (opts.json ? process.stderr : process.stdout).write(`${line}\n`);
  const stopped = untilStopped();
  let stack: LocalStack;
  try {
    stack = await startLocalStack({
      dir: join(demoDir, "console"),
      ...(serverKey ? { serverKey } : {}),
      workerDir: resolve(opts.out, "worker"),
      // With --agent NAME, that one too: a run of an agent not installed ends agent_not_installed rather than waits.
      ...(agent && "name" in agent
        ? { agents: [...new Set([...installedAgents(agent.agentsDir), agent.name])], agentsDir: agent.agentsDir }
        : { agentsDir: agentsDir() }),
      // Every demo run's store and bundle, and the given key: never in a harness's view.
      hide: [demoDir, ...(opts.serverKeyFile ? [resolve(opts.serverKeyFile)] : [])],
      runnerArgs: [
        ...harnessReadyArgs(opts.harnessReadyMs),
        ...sandboxRunnerdArgs(opts),
        ...(opts.delayMs !== undefined ? ["--delay-ms", String(opts.delayMs)] : []),
      ],
      ...(opts.runnerd ? { runnerd: opts.runnerd } : {}),
      runnerContract: opts,
      bundlesDir: demoDir,
      log: (line) => process.stderr.write(`prp demo: ${line}\n`),
    });
  } finally {
    serverKey?.destroy();
  }
  try {
    const client = new PrpClient({ baseUrl: new URL(stack.consoleUrl).origin, token: stack.consoleToken });
    let created: Run;
    try {
      created = await client.createRun(runSpec(opts, target, agent));
    } catch (err) {
      if (!(err instanceof PrpApiError)) throw err;
      process.stderr.write(`prp: the demo's run was refused: ${err.code}: ${err.message}\n`);
      return 2;
    }
    const { runId } = created.run;
    say(`console: ${stack.consoleUrl}#/run/${runId} (watch the run live; start more runs from the page)`);
    const status = await Promise.race([
      followDemoRun(client, stack, runId, target, opts, show),
      stopped.then(() => null),
    ]);
    if (status === null) return 130;
    show(
      `  events          prp events --store sqlite:${join(demoDir, "console", "authority")} --server-key-file ${opts.serverKeyFile ? resolve(opts.serverKeyFile) : join(demoDir, "console", "authority-server-key")} --run ${runId}`,
    );
    say(`console: ${stack.consoleUrl}#/run/${runId} (open until Ctrl-C)`);
    await stopped;
    return status;
  } finally {
    await stack.close();
  }
}

/** The spec POST /v1/runs gets for the demo's run: its script by name, or its agent and prompt. */
function runSpec(opts: ConsoleDemoOptions, target: RunTarget, agent: AgentChoice | undefined): RunSpec {
  const asked: RunSpec["agent"] = !agent
    ? { kind: "fake", script: opts.script }
    : "name" in agent
      ? { kind: "profile", profile: agent.name }
      : { kind: "command", command: agent.command };
  return { agent: asked, prompt: target.turnText, protocolVersion: opts.protocolMax };
}

/** Prints the run's events as the API streams them; at its end, its report (and bundle). */
async function followDemoRun(
  client: PrpClient,
  stack: LocalStack,
  runId: string,
  target: RunTarget,
  opts: ConsoleDemoOptions,
  show: (line: string) => void,
): Promise<number> {
  const events: PrpEvent[] = [];
  const ended = new AbortController();
  // A run that ends with no terminal (its runner never started: worker_lost) ends no stream.
  const watch = setInterval(() => {
    void client.getRun(runId).then(
      ({ run }) => run.dispatch?.state === "ended" && run.terminalState === null && ended.abort(),
      () => {},
    );
  }, 1000);
  try {
    for await (const { event } of client.follow(runId, { signal: ended.signal })) {
      events.push(event);
      show(eventLine(event));
    }
  } finally {
    clearInterval(watch);
  }
  const exit = await settled(stack.runnerExit(runId));
  return reportDurableRun(
    {
      runId,
      dir: join(resolve(opts.out, "demo"), runId),
      events,
      run: await stack.store.run(runId),
      runnerExits: exit ? [{ exitCode: exit.exitCode, signal: exit.signal, success: exit.exitCode === 0 }] : [],
      runnerLogs: exit ? [exit.stderrTail] : [],
    },
    target,
    opts.json === true,
    show,
  );
}

/** The runner's exit, waited for a bounded while (undefined: none started, or still running). */
async function settled(exit: Promise<RunnerExit> | undefined): Promise<RunnerExit | undefined> {
  if (!exit) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), RUNNER_EXIT_WAIT_MS)));
  try {
    return await Promise.race([exit, late]);
  } finally {
    clearTimeout(timer);
  }
}
