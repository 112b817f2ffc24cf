/**
 * The runner (runtime.md §4, §5): start `prp-runnerd` for a run, durable (spawnRunner) or local
 * over stdio (LocalRunnerClient), and read what it writes; or run a runner in this process
 * (startRunner: see its documentation for when to use which).
 */
export { spawnRunner, durableRunnerArgs, runnerdEntry, type RunnerHandle, type SpawnRunnerOptions } from "./spawn.js";
export {
  startRunner,
  StartRunnerError,
  ACP_READY_MS,
  type StartRunnerOptions,
  type DurableRunnerStartOptions,
  type LocalRunnerStartOptions,
  type RunnerHarness,
  type RunnerLimits,
  type RunnerSandbox,
  type RunnerOutcome,
  type StartedRunner,
} from "./start-runner.js";
export type { RunnerHooks } from "./runner-hooks.js";
export type { PermissionPolicy } from "../harness/acp/permissions.js";
export { LocalRunnerClient, type LocalClientOptions } from "./local-client.js";
export { parseStreamRecord, STREAM_SCHEMA, type CommandReceipt, type StreamRecord } from "./stream.js";
export { signalExitStatus, STOP_SIGNALS, type StopSignal } from "./stop-signals.js";
export type { ExitFact } from "../harness/supervisor.js";
export type { RunIdentity } from "../transport/envelope.js";
// The build an authority expects of this package's runner (AuthorityServer's runnerVersion, runnerDigest).
export { runnerBuild } from "./runner-build.js";
