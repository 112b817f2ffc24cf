import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import {
  CREDENTIAL_FILE_HELP,
  CREDENTIAL_PROVIDER_HELP,
  parseCredentialFile,
  parseCredentialProvider,
} from "./credential-options.js";
import { eventLine } from "./event-line.js";
import { visible } from "./terminal-text.js";
import type { ServerKey } from "../authority/server-key.js";
import { readServerKeyFile } from "../authority/server-key-source.js";
import type { PermissionPolicy } from "../harness/acp/permissions.js";
import { StateError } from "../storage/private-sqlite.js";
import { runDurable, type DurableRunFacts } from "../fault/durable-run.js";
import { consoleRefusal, runConsoleDemo } from "./demo-console.js";
import { scenariosDir } from "../harness/script-file.js";
import { runFault } from "./fault.js";
import { reportDurableRun } from "./durable-report.js";
import {
  HARNESS_READY_HELP,
  harnessReadyArgs,
  parseNonNegativeInt,
  parsePositiveInt,
  parseSeed,
  parseProtocolVersion,
} from "./options.js";
import {
  agentChoice,
  agentFlagsOf,
  agentRunnerdArgs,
  permissionPolicyOption,
  withAgentOptions,
  type AgentOptionValues,
} from "./agent-options.js";
import {
  agentCwdRefusal,
  SANDBOX_UNAVAILABLE_EXIT,
  sandboxPolicy,
  type SandboxFlags,
} from "../harness/sandbox/sandbox-policy.js";
import { sandboxRunnerdArgs, withSandboxOptions } from "./sandbox-options.js";
import { agentTarget, scriptTarget } from "./run-target.js";
import type { RunnerContractFlags } from "../authority/runner-contract.js";
import { withRunnerContractOptions } from "./runner-contract-options.js";

interface DemoOptions extends RunnerContractFlags, SandboxFlags, AgentOptionValues {
  script?: string;
  permissionPolicy: PermissionPolicy;
  fault?: string;
  json?: boolean;
  delayMs?: number;
  seed?: number;
  at?: number;
  out: string;
  serverKeyFile?: string;
  protocolMax: number;
  harnessReadyMs?: number;
  credentialFile?: string;
  credentialProvider?: string;
  console?: boolean;
  runnerd?: string;
}

export function registerDemo(program: Command): void {
  withSandboxOptions(
    withRunnerContractOptions(
      withAgentOptions(
        program
          .command("demo")
          .description(
            "one whole durable run on this machine: an embedded authority, prp-runnerd with a one-use ticket, the fake harness or an ACP agent, over the encrypted WebSocket",
          )
          .option("--script <name|file>", "the fake harness script (default happy-path)"),
        "instead of --script, driven durably",
        permissionPolicyOption(
          "deny",
          "with an agent: who answers its permission requests and questions: deny, allow-reads or forbid (the agent must never ask: a request fails the run); nobody is asked in a demo, so questions are cancelled",
        ),
      ),
    ),
  )
    .option("--fault <name>", "inject a fault and show the recovery live (see prp fault --help)")
    .option("--seed <n>", "with --fault: seed every random choice; without it a seed is drawn and printed", parseSeed)
    .option(
      "--at <n>",
      "with --fault crash-after-commit or crash-after-journal: the exact kill point",
      parsePositiveInt,
    )
    .option(
      "--json",
      "print only one closing JSON line: {runId, runTerminalState, committedEvents, deliveries, bundle} (with --fault: the verdict of prp fault --json)",
    )
    .option("--delay-ms <n>", "use this delay for every delay step of the script", parseNonNegativeInt)
    .option("--out <dir>", "where the demo keeps its state: <dir>/demo/<runId>/", ".prp")
    .option(
      "--protocol-max <n>",
      "the run's protocol version, 1-3: the authority registers the run for it and the runner offers 1-N. 2 and 3 add session goals, but a native execution bundle carries v1 events only, so such a run has none (default 1)",
      parseProtocolVersion,
      1,
    )
    .option("--harness-ready-ms <n>", HARNESS_READY_HELP, parsePositiveInt)
    .option(
      "--credential-file <path>",
      `${CREDENTIAL_FILE_HELP} (default with a script: <out>/demo/<runId>/credentials/auth.json, which the credentials-refresh scenario writes)`,
      parseCredentialFile,
    )
    .option("--credential-provider <id>", CREDENTIAL_PROVIDER_HELP, parseCredentialProvider)
    .option(
      "--runnerd <path>",
      "run this prp-runnerd instead of this package's own (another build, e.g. from a runner image): the authority checks its contract",
    )
    .option(
      "--server-key-file <path>",
      "the authority's server key: 64 hex digits, mode 600 (default: generated beside the run's state)",
    )
    .option(
      "--console",
      "run it in a local control plane (authority, API, console, a worker) and print the console's URL at once; start, answer and cancel more runs from the page, until Ctrl-C",
    )
    .addHelpText(
      "after",
      `
Opens a control-plane authority (SQLite under .prp/demo/<runId>/authority) on 127.0.0.1,
issues a bootstrap ticket, queues run.prepare, session.open and turn.start, and starts
prp-runnerd --connect-url with the ticket in its environment. Each event is shown when the
authority has committed it. Ends with the reduced session, the reconciliation, the result
and the native execution bundle.

--console serves a whole control plane on 127.0.0.1 until Ctrl-C: the authority (SQLite under
.prp/demo/console/), the HTTP API v1, the console, and a worker (up to 4 runs, in .prp/worker/)
advertising the named agents installed. The demo's run is created through the API and run by
that worker; the console's URL with its token is printed at once (and written, mode 600, to
.prp/demo/console/console-url). Runs started from the page run there too. Ctrl-C cancels the
running runs and stops it all; the exit status is the demo's run's.

Examples:
  npm start
  npm start -- --console
  prp demo --script error
  prp demo --script goals --protocol-max 3
  prp demo --script credentials-refresh
  prp demo --agent claude --prompt "explain this repo"
  prp demo --fault socket-drop
  prp demo --fault runner-restart --seed 7
  prp demo --json`,
    )
    .action(async (opts: DemoOptions, command: Command) => {
      if (opts.fault && opts.console)
        return program.error(
          "--console is for a demo run: a fault run's stores are under its own folder (prp console --store … reads them)",
          { exitCode: 2 },
        );
      if (opts.fault && opts.serverKeyFile !== undefined)
        return program.error(
          "--server-key-file is for a demo run; a fault run generates its own key beside its state",
          { exitCode: 2 },
        );
      process.exitCode = opts.fault
        ? await runFault(program, opts.fault, opts, true)
        : await runDemo(program, opts, command);
    });
}

/** prp authority serve's default --poll-ms. */
const DEMO_POLL_MS = 200;

async function runDemo(program: Command, opts: DemoOptions, command: Command): Promise<number> {
  if (opts.seed !== undefined || opts.at !== undefined)
    return program.error("--seed and --at choose a fault's kill point: use them with --fault", { exitCode: 2 });
  const refused = opts.console ? consoleRefusal(command) : null;
  if (refused) return program.error(refused, { exitCode: 2 });
  const agent = agentChoice(program, opts);
  if (agent && (opts.script || !opts.prompt))
    return program.error("an agent (--agent or --agent-command) needs --prompt <text>, and no --script", {
      exitCode: 2,
    });
  if (agent && opts.permissionPolicy === "ask")
    return program.error("a demo has nobody to ask: use --permission-policy deny, allow-reads or forbid", {
      exitCode: 2,
    });
  if (opts.console && opts.script !== undefined && !isScenarioName(opts.script))
    return program.error(
      `--console plays a scenario by name (its worker's runner finds it in ${scenariosDir()}), not a file: got "${opts.script}"`,
      { exitCode: 2 },
    );
  const target = agent ? agentTarget(agent, opts.prompt!) : scriptTarget(program, opts.script ?? "happy-path");
  const agentFlags = agent && agentFlagsOf(agent, opts, opts.permissionPolicy);
  // The demo's folder holds every run's authority store and key: never in the harness's view, nor its workspace.
  const demoHidden = [resolve(opts.out), ...(opts.serverKeyFile ? [resolve(opts.serverKeyFile)] : [])];
  const cwdRefused =
    agent && !opts.console
      ? agentCwdRefusal(opts.agentCwd ?? process.cwd(), [...opts.sandboxHide, ...demoHidden])
      : null;
  if (cwdRefused) return program.error(cwdRefused, { exitCode: 2 });
  const sandboxed = sandboxPolicy(opts, [], (line) => process.stderr.write(`prp: ${line}\n`));
  if (!sandboxed.ok) {
    process.stderr.write(`prp: ${sandboxed.message}\n`);
    return SANDBOX_UNAVAILABLE_EXIT;
  }
  const serverKey = opts.serverKeyFile === undefined ? undefined : serverKeyOption(program, opts.serverKeyFile);
  // Every line shown holds text the agent chose (a result's summary, a reason): controls made visible.
  const show = (line: string) => {
    if (!opts.json) console.log(visible(line));
  };
  if (opts.console) {
    show(
      "starting a local control plane on 127.0.0.1 (an authority, the API, the console and a worker); the demo's run is queued through the API and its events appear as the authority commits them",
    );
    return runConsoleDemo({ ...opts, script: opts.script ?? "happy-path" }, target, agent, serverKey, show);
  }
  show(
    "starting an authority on 127.0.0.1 and prp-runnerd with a one-use ticket; events appear as the authority commits them",
  );
  let facts: DurableRunFacts;
  try {
    facts = await runDurable({
      ...(agentFlags
        ? { agent: { runnerdArgs: agentRunnerdArgs(agentFlags), prompt: opts.prompt! } }
        : { script: target.script! }),
      dir: resolve(opts.out, "demo"),
      ...(opts.delayMs !== undefined ? { delayMs: opts.delayMs } : {}),
      ...(serverKey ? { serverKey } : {}),
      protocolVersion: opts.protocolMax,
      // Opted in, as the bundled transport does for fresh sessions; an agent's file only when given.
      credentials: {
        ...(opts.credentialFile ? { file: opts.credentialFile } : {}),
        ...(opts.credentialProvider ? { provider: opts.credentialProvider } : {}),
      },
      ...(opts.runnerd ? { runnerd: resolve(opts.runnerd) } : {}),
      runnerArgs: [...harnessReadyArgs(opts.harnessReadyMs), ...sandboxRunnerdArgs(opts, demoHidden)],
      runnerContract: opts,
      // Its store is open to others (prp authority command): what they queue is delivered as the daemon does.
      pollStoreMs: DEMO_POLL_MS,
      onCommitted: (event) => show(eventLine(event)),
      note: (text) => process.stderr.write(`${text}\n`),
    });
  } finally {
    serverKey?.destroy();
  }
  const status = reportDurableRun(facts, target, opts.json === true, show);
  // The demo's store is an authority store like any other: the same tool reads its run log.
  const keyFile = opts.serverKeyFile ?? join(facts.dir, "authority-server-key");
  const storeFlags = `--store sqlite:${join(facts.dir, "authority")} --server-key-file ${keyFile}`;
  show(`  events          prp events ${storeFlags} --run ${facts.runId}`);
  show(
    `  console         prp demo --console runs it in a local control plane with a browser console, where you start more runs; or: prp console ${storeFlags} --bundles-dir ${resolve(opts.out, "demo")}`,
  );
  return status;
}

/** A scenario of the catalog, by name: what a worker's runner can find (a file is the demo's machine's only). */
const isScenarioName = (name: string): boolean =>
  /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) && existsSync(join(scenariosDir(), `${name}.json`));

/** A key file refused (mode, owner, symlink, contents) is a usage error with its code, before anything starts. */
function serverKeyOption(program: Command, path: string): ServerKey {
  try {
    return readServerKeyFile(path);
  } catch (err) {
    if (err instanceof StateError) return program.error(`prp: ${err.message}`, { exitCode: 2 });
    throw err;
  }
}
