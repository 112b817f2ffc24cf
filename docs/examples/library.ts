// One durable run through the library: an authority on SQLite, a runner with the fake harness,
// and the committed log read back from the store.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuthorityServer, ServerKey, SqliteAuthorityStore, type RunIdentity } from "prp-kit/authority";
import { runnerBuild, spawnRunner } from "prp-kit/runner";

const within = <T>(ms: number, what: string, promise: Promise<T>): Promise<T> =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms).unref()),
  ]);

const root = mkdtempSync(join(tmpdir(), "prp-library-"));
// In production the key lives in a file or the environment (readServerKeyFile, serverKeyFromEnvironment).
const serverKey = ServerKey.generate();
const store = SqliteAuthorityStore.open(join(root, "authority"), { serverKey });
const build = runnerBuild();
const authority = AuthorityServer.open({ store, runnerVersion: build.version, runnerDigest: build.digest });
const identity: RunIdentity = {
  runnerInstanceId: "runner_1",
  environmentLeaseId: "env_1",
  runId: "run_1",
  normalizedSessionId: "session_1",
  turnId: "turn_1",
  itemId: "item_1",
};
let runner: ReturnType<typeof spawnRunner> | undefined;
try {
  await authority.listen(0);
  const registered = await authority.registerRun(identity);
  if (!registered.ok) throw new Error(registered.error.message);
  await authority.queueCommand(identity.runId, "run.prepare", { workspace: "demo" });
  await authority.queueCommand(identity.runId, "session.open", { reuse: "new_per_run" });
  await authority.queueCommand(identity.runId, "turn.start", { text: "Play the happy path.", turnId: identity.turnId });

  const ticket = await authority.issueBootstrapTicket(identity.runId);
  if (!ticket.ok) throw new Error(ticket.error.message);
  runner = spawnRunner({
    connectUrl: authority.connectUrl(identity.runId),
    ticket: ticket.value.token,
    stateDir: join(root, "runner-state"),
    identity,
    script: "happy-path",
    // The authority's store is no business of the harness.
    sandboxHide: [join(root, "authority")],
    // The protocol gives the harness 2 s to say ready; a loaded machine may need longer.
    extraArgs: ["--harness-ready-ms", "10000"],
  });
  const exit = await within(60_000, "the runner's exit", runner.exited);
  if (exit.exitCode !== 0)
    throw new Error(`the runner exited ${exit.exitCode ?? exit.signal}: ${runner.stderrTail().join("\n")}`);

  const log = await store.eventLog(identity.runId, 0, 1_000);
  const types = log.map((row) => row.eventType);
  if (!types.includes("run.terminal")) throw new Error(`no run.terminal among ${types.join(", ")}`);
  log.forEach((row, i) => {
    if (row.sourceSeq !== i + 1) throw new Error(`sourceSeq ${row.sourceSeq} at position ${i + 1}`);
  });
  console.log(`${log.length} events committed, the last ${types.at(-1)}`);
} finally {
  await runner?.stop();
  await authority.close();
  await store.close();
  serverKey.destroy();
  rmSync(root, { recursive: true, force: true });
}
