import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { AuthorityServer, ServerKey, SqliteAuthorityStore, type RunIdentity } from "../../src/authority/index.js";
import {
  runnerBuild,
  startRunner,
  StartRunnerError,
  type DurableRunnerStartOptions,
  type StartedRunner,
} from "../../src/runner/index.js";
import { until } from "../support/until.js";
import { within } from "../support/within.js";

/** A turn that starts an item and then waits long enough to be stopped in the middle. */
const LONG_SCRIPT = {
  schema: "paperclip.fake_harness.script.v1",
  name: "long-turn",
  description: "Starts an item, then waits a minute before finishing: a run to stop in the middle.",
  steps: [
    { kind: "event", event_type: "item.started", item_id: "item_command_1", payload: { kind: "command", text: "" } },
    { kind: "delay", milliseconds: 60_000 },
    { kind: "exit", code: 0 },
  ],
};

describe("startRunner: a durable runner in this process", () => {
  let root: string;
  let serverKey: ServerKey;
  let store: SqliteAuthorityStore;
  let authority: AuthorityServer;
  const started: StartedRunner[] = [];
  let runs = 0;
  const log: string[] = [];

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "prp-start-runner-"));
    serverKey = ServerKey.generate();
    store = SqliteAuthorityStore.open(join(root, "authority"), { serverKey });
    const build = runnerBuild();
    authority = AuthorityServer.open({ store, runnerVersion: build.version, runnerDigest: build.digest });
    await authority.listen(0);
    writeFileSync(join(root, "long-turn.json"), JSON.stringify(LONG_SCRIPT));
  });
  after(async () => {
    for (const runner of started) runner.stop();
    await Promise.allSettled(started.map((runner) => within(runner.outcome, 40_000, "a runner to end in after()")));
    await authority.close();
    await store.close();
    serverKey.destroy();
    rmSync(root, { recursive: true, force: true });
  });

  /** A new run with its three commands queued, and the startRunner options for it. */
  const newRun = async (script: string): Promise<{ identity: RunIdentity; options: DurableRunnerStartOptions }> => {
    const n = ++runs;
    const identity: RunIdentity = {
      runnerInstanceId: `runner_${n}`,
      environmentLeaseId: `env_${n}`,
      runId: `run_${n}`,
      normalizedSessionId: `session_${n}`,
      turnId: `turn_${n}`,
      itemId: `item_${n}`,
    };
    const registered = await authority.registerRun(identity);
    assert.ok(registered.ok, registered.ok ? "" : registered.error.message);
    await authority.queueCommand(identity.runId, "run.prepare", { workspace: "demo" });
    await authority.queueCommand(identity.runId, "session.open", { reuse: "new_per_run" });
    await authority.queueCommand(identity.runId, "turn.start", { text: "Play the script.", turnId: identity.turnId });
    const ticket = await authority.issueBootstrapTicket(identity.runId);
    assert.ok(ticket.ok, ticket.ok ? "" : ticket.error.message);
    return {
      identity,
      options: {
        mode: "durable",
        connectUrl: authority.connectUrl(identity.runId),
        ticket: ticket.value.token,
        stateDir: join(root, `runner-state-${n}`),
        identity,
        harness: { kind: "fake", script },
        // The authority's store is no business of the harness.
        sandbox: { mode: "isolated", hidden: [join(root, "authority")] },
        // The protocol gives the harness 2 s to say ready; a loaded machine may need longer.
        limits: { harnessReadyMs: 10_000 },
        log: (line) => log.push(line),
      },
    };
  };
  const start = (options: DurableRunnerStartOptions): StartedRunner => {
    const runner = startRunner(options);
    started.push(runner);
    return runner;
  };
  const committed = async (runId: string) => store.eventLog(runId, 0, 1_000);

  it("plays the run to its terminal, which the authority's store holds, and settles with code 0", async () => {
    const { identity, options } = await newRun("happy-path");
    const runner = start(options);
    const outcome = await within(runner.outcome, 60_000, "the happy-path run's outcome");
    assert.deepEqual(outcome, { code: 0, reason: "run_delivered", stoppedBy: null }, log.join("\n"));

    const events = await committed(identity.runId);
    const types = events.map((row) => row.eventType);
    assert.equal(types.at(-1), "run.terminal", `the last committed event: ${types.join(", ")}`);
    assert.equal(types.filter((t) => t === "run.terminal").length, 1);
    assert.deepEqual(
      events.map((row) => row.sourceSeq),
      events.map((_, i) => i + 1),
      "every event once, in order",
    );
    const terminal = JSON.parse(events.at(-1)!.envelope) as {
      sourceInstanceId: string;
      payload: { runTerminalState: string };
    };
    assert.equal(terminal.sourceInstanceId, identity.runnerInstanceId);
    assert.equal(terminal.payload.runTerminalState, "succeeded");
  });

  it("stop() mid-run cancels it: a committed cancelled terminal, and the SIGTERM status", async () => {
    const { identity, options } = await newRun(join(root, "long-turn.json"));
    const runner = start(options);
    await until(
      async () => (await committed(identity.runId)).some((row) => row.eventType === "item.started"),
      "the harness's item.started to be committed",
      30_000,
    );
    runner.stop();
    runner.stop(); // a second stop changes nothing
    const outcome = await within(runner.outcome, 40_000, "the stopped run's outcome");
    assert.deepEqual(outcome, { code: 143, reason: "cancelled", stoppedBy: "SIGTERM" }, log.join("\n"));

    const events = await committed(identity.runId);
    const terminals = events.filter((row) => row.eventType === "run.terminal");
    assert.equal(terminals.length, 1, `committed: ${events.map((row) => row.eventType).join(", ")}`);
    assert.equal(events.at(-1)!.eventType, "run.terminal");
    assert.equal(
      (JSON.parse(terminals[0]!.envelope) as { payload: { runTerminalState: string } }).payload.runTerminalState,
      "cancelled",
    );
  });

  it("refuses options that can never run, naming the option, and starts nothing", async () => {
    const { options } = await newRun("happy-path");
    const refused = (bad: unknown, option: string) => {
      assert.throws(
        () => startRunner(bad as DurableRunnerStartOptions),
        (err: unknown) => {
          assert.ok(err instanceof StartRunnerError, `a StartRunnerError, not ${String(err)}`);
          assert.equal(err.option, option);
          assert.match(err.message, new RegExp(`^startRunner: ${option.replace(".", "\\.")}: `));
          return true;
        },
      );
    };
    refused({ ...options, connectUrl: "http://127.0.0.1:1/runs/x" }, "connectUrl");
    refused({ ...options, ticket: undefined }, "ticket");
    refused({ ...options, ticket: "" }, "ticket");
    refused({ ...options, stateDir: undefined }, "stateDir");
    refused({ ...options, identity: { ...options.identity, runId: "not an id" } }, "identity.runId");
    refused({ ...options, harness: { kind: "fake" } }, "harness.script");
    refused({ ...options, harness: { kind: "fake", script: "no-such-scenario" } }, "harness.script");
    refused({ ...options, harness: { kind: "acp", command: "true", cwd: options.stateDir } }, "harness.cwd");
    refused({ ...options, caBundle: "-----BEGIN CERTIFICATE-----" }, "caBundle");
    refused({ ...options, protocolMax: 9 }, "protocolMax");
    refused({ ...options, limits: { harnessReadyMs: 0 } }, "limits.harnessReadyMs");
    refused({ ...options, limits: { stallLimitMs: -1 } }, "limits.stallLimitMs");
    // Past 2^31 - 1 ms a Node timer fires at once: a huge limit would stall the run at its start.
    refused({ ...options, limits: { stallLimitMs: 2 ** 31 } }, "limits.stallLimitMs");
    refused({ ...options, limits: { stallGraceMs: 1.5 } }, "limits.stallGraceMs");
    refused({ ...options, mode: "remote" }, "mode");
    refused(
      {
        mode: "local",
        runId: "run_x",
        sessionId: "session_x",
        runnerId: "runner_x",
        harness: { kind: "fake", script: "happy-path" },
      },
      "input",
    );
    // The run's ticket was never spent: a runner with good options still runs it.
    const runner = start(options);
    assert.equal((await within(runner.outcome, 60_000, "the run after the refusals")).code, 0, log.join("\n"));
  });
});

describe("startRunner: a local runner on caller-supplied streams", () => {
  it("answers commands on the input with records on the output and settles once the input ends", async () => {
    const { PassThrough } = await import("node:stream");
    const input = new PassThrough();
    const output = new PassThrough();
    const lines: string[] = [];
    let buffered = "";
    output.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      lines.push(...parts);
    });
    const runner = startRunner({
      mode: "local",
      runId: "run_local",
      sessionId: "session_local",
      runnerId: "runner_local",
      harness: { kind: "fake", script: "happy-path" },
      input,
      output,
      limits: { harnessReadyMs: 10_000 },
    });
    input.write('{"not":"a command"}\n');
    input.end();
    const outcome = await within(runner.outcome, 30_000, "the local run's outcome");
    assert.deepEqual(outcome, { code: 0, reason: "run_ended", stoppedBy: null });
    const records = lines.map(
      (line) =>
        JSON.parse(line) as {
          kind: string;
          receipt?: { status: string };
          event?: { eventType: string; payload: { reconciliation?: { reason: string } } };
        },
    );
    assert.equal(records[0]!.kind, "receipt");
    assert.equal(records[0]!.receipt!.status, "rejected");
    const terminal = records.at(-1)!.event!;
    assert.equal(terminal.eventType, "run.terminal");
    assert.equal(terminal.payload.reconciliation!.reason, "controller_closed");
  });
});
