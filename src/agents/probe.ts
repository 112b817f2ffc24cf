import * as acp from "@agentclientprotocol/sdk";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { isPlainObject } from "../contract/plain-object.js";
import { cutText } from "../contract/text-cut.js";
import { launchAgent } from "../harness/acp/agent-process.js";
import { initializeParams } from "../harness/acp/initialize-params.js";
import { isSecretKey, REDACTED, redactText } from "../harness/redaction.js";
import type { SandboxPolicy } from "../harness/sandbox/sandbox-policy.js";
import type { SupervisedProcess } from "../harness/supervisor.js";
import type { AgentProfile } from "./catalog.js";
import { credentialPresence, type CredentialPresence } from "./credentials.js";
import { launchCommand } from "./launch.js";
import {
  expectationGaps,
  gapWarnings,
  readInitializeAnswer,
  speaksProtocol,
  type ExpectationGaps,
  type InitializeAnswer,
} from "./probe-answer.js";

export type { ExpectationGaps, ProbedAgentInfo, ProbedAuthMethod } from "./probe-answer.js";

/** ready: it can take a run; needs_auth: it answers but has no credential; broken: it cannot start a run. */
export type ProbeVerdict = "ready" | "needs_auth" | "broken";

/** Why a probed agent is broken. */
export type BrokenCause =
  | "agent_not_installed"
  | "agent_exited_before_initialize"
  | "initialize_timeout"
  | "unsupported_protocol_version"
  | "initialize_failed"
  | "invalid_response";

/** What `prp agents check` found, as data: the same facts in its human and JSON forms. */
export interface ProbeReport {
  agent: string;
  verdict: ProbeVerdict;
  /** Set when broken. */
  cause: BrokenCause | null;
  /** What happened, in a sentence a person reads (agent text in it is redacted). */
  message: string;
  /** The one line that fixes a needs_auth or broken agent. */
  fix: string | null;
  /** The command line started; null when there was none to start. */
  command: string | null;
  /** The agent's process (its group's id); null when none was started. */
  pid: number | null;
  /** Milliseconds from starting the agent to its answer to `initialize`. */
  initializeMs: number | null;
  protocolVersion: number | null;
  agentInfo: InitializeAnswer["agentInfo"];
  agentCapabilities: Record<string, unknown> | null;
  authMethods: InitializeAnswer["authMethods"] | null;
  /** Which of the profile's credential sources are present: names only, never a value. */
  credentials: CredentialPresence;
  expectations: ExpectationGaps | null;
  /** Differences from the profile and what the agent wrote that is not ACP. */
  warnings: string[];
  /** How the agent exited before answering. */
  exit: { exitCode: number | null; signal: string | null } | null;
  /** The last lines of the agent's stderr, redacted; kept when it is broken. */
  stderrTail: string[];
}

export interface ProbeOptions {
  /** The folder agents are installed in. */
  agentsDir: string;
  /** Variables for the agent on top of PATH and HOME (`--agent-env`). */
  env?: Record<string, string>;
  /** The HOME the agent is given, where its credential files are looked for. */
  home: string;
  /** How long the agent has to answer `initialize` (default 60 s: it may be slow to start). */
  timeoutMs?: number;
  /** The agent's working directory (default: this process's). */
  cwd?: string;
  clientVersion?: string;
  /** How long the agent has to exit after its stdin is closed before its group is signalled. */
  settleMs?: number;
  /** The harness sandbox, as a run would give the agent (its cwd and HOME writable); absent: none. */
  sandbox?: SandboxPolicy;
}

export const DEFAULT_PROBE_TIMEOUT_MS = 60_000;
const DEFAULT_SETTLE_MS = 500;
/** After the agent exits, how long its last stdout bytes have to arrive. */
const DRAIN_MS = 200;

type Settled =
  { kind: "answer"; result: unknown } | { kind: "error"; error: unknown } | { kind: "exited" } | { kind: "timeout" };

/**
 * Starts a profile's agent the way a run starts it (its own process group under an orphan
 * guard, PATH, HOME and `env` only), completes ACP `initialize` through the SDK, reports what it
 * answered and whether it can authenticate, then ends its whole group. Never installs anything
 * and never fails: every way an agent can be broken is a report.
 */
export async function probeAgent(profile: AgentProfile, options: ProbeOptions): Promise<ProbeReport> {
  const env = options.env ?? {};
  const credentials = credentialPresence(profile, env, options.home);
  const base = blankReport(profile, credentials);
  const command = launchCommand(profile, options.agentsDir);
  if (!command.ok)
    return broken(base, "agent_not_installed", command.error.message, `run \`prp agents install ${profile.name}\``);

  const warnings: string[] = [];
  let nonJsonLines = 0;
  let rawAnswer: Record<string, unknown> | null = null;
  const { h, stream } = launchAgent(
    {
      command: command.value,
      cwd: options.cwd ?? process.cwd(),
      env: { ...env, HOME: options.home },
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
    },
    {
      line: () => {},
      input: (input) => {
        if (input.kind === "unparsable") nonJsonLines++;
        // initialize is the only request sent: the first response-shaped line is its answer.
        else if (
          input.kind === "received" &&
          !rawAnswer &&
          isPlainObject(input.message) &&
          !("method" in input.message)
        )
          rawAnswer = input.message;
      },
      fact: (fact) => {
        if (fact.kind === "violation") warnings.push(fact.message);
      },
      overlong: (limit) => warnings.push(`the agent wrote a stdout line longer than the ${limit}-byte limit`),
    },
  );
  const report: ProbeReport = { ...base, command: command.value, pid: h.pid };
  const connection = acp.client({ name: "prp-kit" }).connect(stream);
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const timers = new AbortController();
  const answer = connection.agent.request(acp.methods.agent.initialize, initializeParams(options.clientVersion)).then(
    (result): Settled => ({ kind: "answer", result }),
    (error: unknown): Settled => ({ kind: "error", error }),
  );
  const exited = h.exited.then(async (): Promise<Settled> => {
    await Promise.race([h.stdoutEnded, sleep(DRAIN_MS, undefined, { signal: timers.signal }).catch(() => {})]);
    return { kind: "exited" };
  });
  const timeout = sleep(timeoutMs, { kind: "timeout" } as Settled, { signal: timers.signal }).catch(() => null);
  let settled = await Promise.race([answer, exited, timeout.then((t) => t ?? ({ kind: "timeout" } as Settled))]);
  // The answer was read off the wire before the exit: the SDK is about to hand it over.
  if (settled.kind === "exited" && rawAnswer) settled = await Promise.race([answer, sleep(DRAIN_MS, settled)]);
  report.initializeMs =
    settled.kind === "answer" || settled.kind === "error" ? Math.round(performance.now() - started) : null;
  timers.abort();

  const scrub = secretScrubber(profile, env);
  const ended = await endAgent(h, options.settleMs ?? DEFAULT_SETTLE_MS);
  connection.close();
  if (nonJsonLines > 0)
    warnings.push(
      `the agent wrote ${nonJsonLines} stdout line${nonJsonLines === 1 ? "" : "s"} that ${nonJsonLines === 1 ? "is" : "are"} not JSON`,
    );
  report.warnings = warnings.map(scrub);
  const tail = h.log.snapshot().lines.map(scrub);
  const verdict = judge(profile, report, settled, rawAnswer, timeoutMs, ended, scrub);
  return verdict.verdict === "broken" ? { ...verdict, stderrTail: tail } : verdict;
}

/** Closes the agent's stdin, gives it `settleMs` to exit, then ends its whole group (SIGTERM, SIGKILL). */
async function endAgent(h: SupervisedProcess, settleMs: number): Promise<ProbeReport["exit"]> {
  h.closeStdin();
  await Promise.race([h.exited, sleep(settleMs)]);
  const fact = await h.terminate();
  return { exitCode: fact.exitCode, signal: fact.signal };
}

function judge(
  profile: AgentProfile,
  report: ProbeReport,
  settled: Settled,
  rawAnswer: Record<string, unknown> | null,
  timeoutMs: number,
  exit: ProbeReport["exit"],
  scrub: (text: string) => string,
): ProbeReport {
  switch (settled.kind) {
    case "timeout":
      return broken(
        report,
        "initialize_timeout",
        `the agent did not answer initialize within ${timeoutMs} ms`,
        "check that the command speaks ACP on its stdio, or give it longer with --timeout-ms",
      );
    case "exited": {
      const how = exit?.signal ? `was killed by ${exit.signal}` : `exited with code ${exit?.exitCode}`;
      return {
        ...broken(
          report,
          "agent_exited_before_initialize",
          `the agent ${how} before it answered initialize`,
          `run \`${cutText(report.command ?? "", 200)}\` by hand to see why it exits (its stderr is above)`,
        ),
        exit,
      };
    }
    case "error": {
      const rpc = isPlainObject(rawAnswer?.error) ? rawAnswer.error : null;
      if (rpc && typeof rpc.code === "number" && typeof rpc.message === "string")
        return broken(
          report,
          "initialize_failed",
          `the agent refused initialize: ${scrub(cutText(rpc.message, 400))} (JSON-RPC error ${rpc.code})`,
          "the agent's message says why; check its release and its command line",
        );
      const why = settled.error instanceof Error ? settled.error.message : String(settled.error);
      return broken(
        report,
        "invalid_response",
        `the ACP SDK refused the agent's answer to initialize: ${scrub(cutText(why, 400))}`,
        "the command does not speak ACP on its stdout: check its release and its command line",
      );
    }
    case "answer":
      return judgeAnswer(profile, report, settled.result);
  }
}

function judgeAnswer(profile: AgentProfile, report: ProbeReport, result: unknown): ProbeReport {
  const read = readInitializeAnswer(result);
  if (!read.ok)
    return broken(
      report,
      "invalid_response",
      `${read.why}: it is not an ACP InitializeResponse`,
      "the command does not speak ACP on its stdout: check its release and its command line",
    );
  const a = read.value;
  const expectations = expectationGaps(profile, a);
  const answered: ProbeReport = {
    ...report,
    protocolVersion: a.protocolVersion,
    agentInfo: a.agentInfo,
    agentCapabilities: a.agentCapabilities,
    authMethods: a.authMethods,
    expectations,
    warnings: [...gapWarnings(profile, expectations), ...report.warnings],
  };
  if (!speaksProtocol(a))
    return broken(
      answered,
      "unsupported_protocol_version",
      `the agent answered initialize with ACP protocol version ${a.protocolVersion}; PRP Kit speaks only version ${acp.PROTOCOL_VERSION}`,
      `use a release of the agent that speaks ACP version ${acp.PROTOCOL_VERSION}`,
    );
  if (a.authMethods.length === 0)
    return { ...answered, verdict: "ready", message: "the agent answered initialize and asks for no authentication" };
  if (report.credentials.present)
    return {
      ...answered,
      verdict: "ready",
      message: "the agent answered initialize and a credential source is present",
    };
  return {
    ...answered,
    verdict: "needs_auth",
    message: "the agent answered initialize, but none of its credential sources is present",
    fix: profile.auth.login,
  };
}

function blankReport(profile: AgentProfile, credentials: CredentialPresence): ProbeReport {
  return {
    agent: profile.name,
    verdict: "broken",
    cause: null,
    message: "",
    fix: null,
    command: null,
    pid: null,
    initializeMs: null,
    protocolVersion: null,
    agentInfo: null,
    agentCapabilities: null,
    authMethods: null,
    credentials,
    expectations: null,
    warnings: [],
    exit: null,
    stderrTail: [],
  };
}

const broken = (report: ProbeReport, cause: BrokenCause, message: string, fix: string): ProbeReport => ({
  ...report,
  verdict: "broken",
  cause,
  message,
  fix,
});

/**
 * Redaction by shape (redactText), then every value given on purpose under a credential's name:
 * a token the agent echoes bare, in no shape redaction knows, is still hidden.
 */
function secretScrubber(profile: AgentProfile, env: Record<string, string>): (text: string) => string {
  const secrets = Object.entries(env)
    .filter(([name, value]) => value.length >= 4 && (profile.auth.env.includes(name) || isSecretKey(name)))
    .map(([, value]) => value);
  return (text) => {
    return secrets.reduce((t, secret) => t.split(secret).join(REDACTED), redactText(text).text);
  };
}
