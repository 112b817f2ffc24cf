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
import type { ConsoleServer } from "../console/server.js";
import type { StoreOptions } from "./authority-options.js";
import { DEFAULT_CONSOLE_LISTEN, startConsole, storeSource, untilStopped } from "./console-serve.js";
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
      "after the run, keep a console open on it (prp console: its timeline, session and bundle in a browser) and print its URL, until Ctrl-C",
    )
    .addHelpText(
      "after",
      `
Opens a control-plane authority (SQLite under .prp/demo/<runId>/authority) on 127.0.0.1,
issues a bootstrap ticket, queues run.prepare, session.open and turn.start, and starts
prp-runnerd --connect-url with the ticket in its environment. Each event is shown when the
authority has committed it. Ends with the reduced session, the reconciliation, the result
and the native execution bundle.

Examples:
  npm start
  prp demo --script error
  prp demo --script goals --protocol-max 3
  prp demo --script credentials-refresh
  prp demo --agent claude --prompt "explain this repo"
  prp demo --fault socket-drop
  prp demo --fault runner-restart --seed 7
  prp demo --json`,
    )
    .action(async (opts: DemoOptions) => {
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
      process.exitCode = opts.fault ? await runFault(program, opts.fault, opts, true) : await runDemo(program, opts);
    });
}

/** prp authority serve's default --poll-ms. */
const DEMO_POLL_MS = 200;

async function runDemo(program: Command, opts: DemoOptions): Promise<number> {
  if (opts.seed !== undefined || opts.at !== undefined)
    return program.error("--seed and --at choose a fault's kill point: use them with --fault", { exitCode: 2 });
  const agent = agentChoice(program, opts);
  if (agent && (opts.script || !opts.prompt))
    return program.error("an agent (--agent or --agent-command) needs --prompt <text>, and no --script", {
      exitCode: 2,
    });
  if (agent && opts.permissionPolicy === "ask")
    return program.error("a demo has nobody to ask: use --permission-policy deny, allow-reads or forbid", {
      exitCode: 2,
    });
  const target = agent ? agentTarget(agent, opts.prompt!) : scriptTarget(program, opts.script ?? "happy-path");
  const agentFlags = agent && agentFlagsOf(agent, opts, opts.permissionPolicy);
  // The demo's folder holds every run's authority store and key: never in the harness's view, nor its workspace.
  const demoHidden = [resolve(opts.out), ...(opts.serverKeyFile ? [resolve(opts.serverKeyFile)] : [])];
  const cwdRefused = agent
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
  show(
    "starting an authority on 127.0.0.1 and prp-runnerd with a one-use ticket; events appear as the authority commits them",
  );
  // With --console, the console opens on the demo's store as soon as the run is registered: the run is watched live, then read.
  let consoleServer: ConsoleServer | undefined;
  const consoleStore = (dir: string): StoreOptions => ({
    store: `sqlite:${join(dir, "authority")}`,
    serverKeyFile: opts.serverKeyFile ?? join(dir, "authority-server-key"),
  });
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
      ...(opts.console
        ? {
            onRegistered: async ({ runId, dir }) =>
              void (consoleServer = await watchInConsole(
                consoleStore(dir),
                resolve(opts.out, "demo"),
                runId,
                opts.json === true,
              )),
          }
        : {}),
      ...(opts.runnerd ? { runnerd: resolve(opts.runnerd) } : {}),
      runnerArgs: [...harnessReadyArgs(opts.harnessReadyMs), ...sandboxRunnerdArgs(opts, demoHidden)],
      runnerContract: opts,
      // Its store is open to others (the console, prp authority command): what they queue is delivered as the daemon does.
      pollStoreMs: DEMO_POLL_MS,
      onCommitted: (event) => show(eventLine(event)),
      note: (text) => process.stderr.write(`${text}\n`),
    });
  } catch (err) {
    await consoleServer?.close();
    throw err;
  } finally {
    serverKey?.destroy();
  }
  const status = reportDurableRun(facts, target, opts.json === true, show);
  // The demo's store is an authority store like any other: the same tool reads its run log.
  const keyFile = opts.serverKeyFile ?? join(facts.dir, "authority-server-key");
  const storeFlags = `--store sqlite:${join(facts.dir, "authority")} --server-key-file ${keyFile}`;
  show(`  events          prp events ${storeFlags} --run ${facts.runId}`);
  if (!opts.console) {
    show(
      `  console         prp demo --console keeps a browser console open on the run; or: prp console ${storeFlags} --bundles-dir ${resolve(opts.out, "demo")}`,
    );
    return status;
  }
  if (consoleServer) {
    (opts.json ? process.stderr : process.stdout).write(
      `console: ${consoleServer.url}#/run/${facts.runId} (open until Ctrl-C)\n`,
    );
    await untilStopped();
    await consoleServer.close();
  }
  return status;
}

/** A console on the demo's store: its URL on stdout (on stderr with --json, whose stdout is one line). */
async function watchInConsole(
  store: StoreOptions,
  bundlesDir: string,
  runId: string,
  json: boolean,
): Promise<ConsoleServer> {
  const say = (line: string) => (json ? process.stderr : process.stdout).write(`${line}\n`);
  return startConsole(await storeSource(store), DEFAULT_CONSOLE_LISTEN, {
    bundlesDir,
    print: (url) => say(`console: ${url}#/run/${runId} (watch the run live)`),
  });
}

/** A key file refused (mode, owner, symlink, contents) is a usage error with its code, before anything starts. */
function serverKeyOption(program: Command, path: string): ServerKey {
  try {
    return readServerKeyFile(path);
  } catch (err) {
    if (err instanceof StateError) return program.error(`prp: ${err.message}`, { exitCode: 2 });
    throw err;
  }
}
