import { homedir } from "node:os";
import type { Command } from "commander";
import { agentsDir } from "../agents/agents-dir.js";
import { findProfile, loadCatalog } from "../agents/catalog.js";
import { shellWord } from "../agents/launch.js";
import { DEFAULT_PROBE_TIMEOUT_MS, probeAgent, type ProbeReport, type ProbeVerdict } from "../agents/probe.js";
import { packageVersion } from "../contract/package-info.js";
import { collectAgentEnv } from "./agent-options.js";
import { formatProbeReport } from "./agents-check-report.js";
import { parsePositiveInt } from "./options.js";
import { printableJson, visible } from "./terminal-text.js";
import { withSandboxOptions } from "./sandbox-options.js";
import { sandboxPolicy, SANDBOX_UNAVAILABLE_EXIT, type SandboxFlags } from "../harness/sandbox/sandbox-policy.js";

/** Each verdict's exit status; usage errors (an unknown agent, a bad catalog) exit 2. */
export const CHECK_EXIT: Record<ProbeVerdict, number> = { ready: 0, needs_auth: 3, broken: 4 };

interface CheckFlags extends SandboxFlags {
  json?: boolean;
  agentsDir?: string;
  catalog?: string;
  agentEnv?: Record<string, string>;
  timeoutMs: number;
}

/** `prp agents check NAME`: start the agent, complete ACP initialize, say whether it can take a run. */
export function registerAgentsCheck(agents: Command): void {
  const check = agents
    .command("check")
    .description("start a named agent, complete ACP initialize, and say whether it is ready to take a run")
    .argument("<name>", "the agent's name in the catalog (`prp agents list`)")
    .option("--json", "print one JSON document instead of lines")
    .option(
      "--agents-dir <dir>",
      "the folder agents are installed in (default: $PRP_AGENTS_DIR, then ~/.cache/prp-kit/agents)",
    )
    .option("--catalog <file>", "a catalog of your own, read after the built-in one (default: $PRP_AGENT_CATALOG)")
    .option("--agent-env <K=V>", "a variable for the agent, on top of PATH and HOME (repeatable)", collectAgentEnv)
    .option(
      "--timeout-ms <n>",
      "how long the agent has to answer initialize",
      parsePositiveInt,
      DEFAULT_PROBE_TIMEOUT_MS,
    );
  withSandboxOptions(check)
    .addHelpText(
      "after",
      `
The agent is started as a run starts it: in the harness sandbox (--sandbox, the default on
Linux: exit 8 where it cannot be set up), its own process group, an environment of PATH, HOME
(yours, or --agent-env HOME=DIR) and each --agent-env, nothing else. check installs and
downloads nothing. Only whether each credential source exists is reported, never a value.
Afterwards the agent's whole process group is ended (stdin closed, then SIGTERM, SIGKILL).

Verdicts and exit statuses:
  0  ready       initialize completed (ACP version 1) and a credential source is present,
                 or the agent asks for no authentication
  3  needs_auth  initialize completed, but none of the agent's credential sources is present
  4  broken      agent_not_installed, agent_exited_before_initialize, initialize_timeout,
                 unsupported_protocol_version, initialize_failed or invalid_response
  2  usage error: an unknown agent, an unreadable or invalid catalog, a bad flag
  8  sandbox_unavailable: the harness sandbox cannot be set up here (--sandbox none runs without it)`,
    )
    .action(async (name: string, flags: CheckFlags) => {
      const catalog = loadCatalog(flags.catalog);
      const profile = catalog.ok ? findProfile(catalog.value, name) : catalog;
      if (!profile.ok) {
        process.stderr.write(`prp agents check: ${visible(profile.error.message)}\n`);
        process.exit(2);
      }
      const sandboxed = sandboxPolicy(flags, [], (line) => process.stderr.write(`prp agents check: ${line}\n`));
      if (!sandboxed.ok) {
        process.stderr.write(`prp agents check: sandbox_unavailable: ${sandboxed.message}\n`);
        process.exit(SANDBOX_UNAVAILABLE_EXIT);
      }
      const env = flags.agentEnv ?? {};
      const report = await probeAgent(profile.value, {
        sandbox: sandboxed.policy,
        agentsDir: agentsDir(flags.agentsDir),
        env,
        home: env.HOME ?? process.env.HOME ?? homedir(),
        timeoutMs: flags.timeoutMs,
        clientVersion: packageVersion(),
      });
      const shown = withInstallFlags(report, flags);
      process.stdout.write(
        flags.json ? `${printableJson(JSON.stringify(shown, null, 2))}\n` : formatProbeReport(shown),
      );
      process.exitCode = CHECK_EXIT[shown.verdict];
    });
}

/** The install command of the fix names the same catalog and folder this check read. */
function withInstallFlags(report: ProbeReport, flags: CheckFlags): ProbeReport {
  if (report.cause !== "agent_not_installed") return report;
  const extra = [
    ...(flags.catalog ? [`--catalog ${shellWord(flags.catalog)}`] : []),
    ...(flags.agentsDir ? [`--agents-dir ${shellWord(flags.agentsDir)}`] : []),
  ];
  return { ...report, fix: `run \`prp agents install ${[report.agent, ...extra].join(" ")}\`` };
}
