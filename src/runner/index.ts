/**
 * The runner (runtime.md §4, §5): start `prp-runnerd` for a run, durable (spawnRunner) or local
 * over stdio (LocalRunnerClient), and read what it writes.
 */
export { spawnRunner, durableRunnerArgs, runnerdEntry, type RunnerHandle, type SpawnRunnerOptions } from "./spawn.js";
export { LocalRunnerClient, type LocalClientOptions } from "./local-client.js";
export { parseStreamRecord, STREAM_SCHEMA, type CommandReceipt, type StreamRecord } from "./stream.js";
export { signalExitStatus, STOP_SIGNALS, type StopSignal } from "./stop-signals.js";
export type { ExitFact } from "../harness/supervisor.js";
export type { RunIdentity } from "../transport/envelope.js";
// The build an authority expects of this package's runner (AuthorityServer's runnerVersion, runnerDigest).
export { runnerBuild } from "../cli/runner-build.js";
