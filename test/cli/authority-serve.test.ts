import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { readServerKeyFile } from "../../src/authority/server-key-source.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";
import {
  authorityFolder,
  killAll,
  runnerArgs,
  spawnPrp,
  spawnRunnerd,
  startDaemon,
  type Daemon,
} from "./authority-processes.js";
import { answerWhenAsked, eventLines, judgeRun, type PrpEventLine } from "./authority-run.js";
import { adminJson, runPrp } from "./run-cli.js";

describe("the run judge of these tests", () => {
  const run = (types: string[]): PrpEventLine[] =>
    types.map((eventType, i) => ({
      sourceSeq: i + 1,
      eventType,
      payload: eventType === "run.terminal" ? { runTerminalState: "succeeded" } : {},
    }));
  it("passes a whole run and fails a gap, a second terminal, a missing one and one before the end", () => {
    assert.deepEqual(judgeRun(run(["run.started", "item.delta", "run.terminal"])), {
      runTerminalState: "succeeded",
      problems: [],
    });
    const gap = run(["run.started", "item.delta", "run.terminal"]);
    gap.splice(1, 1);
    assert.match(judgeRun(gap).problems.join(), /event 2 has sourceSeq 3/);
    assert.match(
      judgeRun(run(["run.started", "run.terminal", "run.terminal"])).problems.join(),
      /2 run\.terminal events/,
    );
    assert.match(judgeRun(run(["run.started", "item.delta"])).problems.join(), /0 run\.terminal events/);
    assert.match(judgeRun(run(["run.terminal", "item.delta"])).problems.join(), /the last event is item\.delta/);
  });
});

describe("prp authority serve: a deployable authority, run by hand with the admin commands", () => {
  let dir: string;
  let key: string;
  let store: string[];
  const daemons: Daemon[] = [];
  before(() => {
    ({ dir, key, store } = authorityFolder("prp-authority-"));
  });
  after(async () => {
    await killAll(daemons);
    rmSync(dir, { recursive: true, force: true });
  });
  const admin = (args: string[]) => adminJson(store, args);

  it("docs/cli/authority.md's run: serve, run create, ticket, prp-runnerd, the runner's questions answered with prp authority command, events; SIGTERM exits 0 and the store keeps the log", async () => {
    const daemon = await startDaemon([...store, "--listen", "127.0.0.1:0", "--poll-ms", "50"]);
    daemons.push(daemon);
    assert.match(daemon.url, /^ws:\/\/127\.0\.0\.1:\d+$/);

    const created = admin([
      "authority",
      "run",
      "create",
      "--json",
      "--script",
      "permission-input",
      "--prompt",
      "Play the permission-input script.",
    ]) as { runId: string; identity: { turnId: string }; commands: Array<{ type: string }>; runnerArgs: string[] };
    assert.deepEqual(
      created.commands.map((c) => c.type),
      ["run.prepare", "session.open", "turn.start"],
    );
    const runId = created.runId;
    const ticket = admin(["authority", "ticket", runId, "--json"]) as { ticket: string };
    assert.match(ticket.ticket, /^bootstrap_/);

    // Follow the log from before the runner starts: it must end by itself at the terminal.
    const follow = spawnPrp(["events", "--run", runId, "--follow", "--json", "--poll-ms", "50", ...store]);
    const runner = spawnRunnerd(
      [...runnerArgs(created, daemon.url, join(dir, `runner-${runId}`)), "--delay-ms", "0", ...PATIENT_HARNESS],
      ticket.ticket,
      dir,
    );

    // The harness asks twice and waits: only the answers queued by another process, through the daemon, move it on.
    const committed = () => eventLines(runPrp(["events", "--run", runId, "--json", ...store]).stdout);
    const resolve = (payload: Record<string, unknown>) => {
      const queued = admin([
        "authority",
        "command",
        runId,
        "request.resolve",
        "--json",
        "--payload",
        JSON.stringify(payload),
      ]);
      assert.equal(queued.created, true);
    };
    await answerWhenAsked(committed, resolve, created.identity.turnId, () => `runner: ${runner.stderr()}`);

    assert.equal(await runner.exited(), 0, runner.stderr());
    assert.equal(await follow.exited(), 0, follow.stderr());
    const events = committed();
    const verdict = judgeRun(events);
    assert.deepEqual(verdict.problems, []);
    assert.equal(verdict.runTerminalState, "succeeded", JSON.stringify(events.at(-1)));
    assert.deepEqual(
      events.filter((e) => e.eventType === "runtime_request.resolved").length,
      2,
      "both answers reached the harness",
    );
    assert.deepEqual(
      eventLines(follow.stdout()),
      events,
      "--follow printed the same events, in order, and stopped at the terminal",
    );

    const runs = runPrp(["authority", "runs", "--json", ...store]);
    const { lastRunner, dispatch, ...listed } = JSON.parse(runs.stdout.trim()) as {
      lastRunner: Record<string, unknown>;
      dispatch: Record<string, unknown>;
    };
    // The ticket issued by hand took the run out of the queue: claimed by nobody, ended by its terminal.
    assert.equal(dispatch.state, "claimed");
    assert.equal(dispatch.workerId, null);
    assert.deepEqual(listed, {
      runId,
      state: "ended",
      waiting: null,
      ackedSourceSeq: events.length,
      terminal: true,
      commands: 5,
      pendingCommands: 0,
      connectionCount: 1,
      currentConnectionId: "connection_1",
      revocationEpoch: 0,
      protocolVersion: 3,
    });
    // The connection's record holds the contract digest the runner sent: this tree's committed one.
    const treeDigest = (
      JSON.parse(readFileSync(join(packageRoot(), "protocol/contract-digest.json"), "utf8")) as {
        contractDigest: string;
      }
    ).contractDigest;
    assert.deepEqual(
      [lastRunner.connectionId, lastRunner.protocolVersion, lastRunner.contractDigest],
      ["connection_1", 3, treeDigest],
    );
    assert.match(String(lastRunner.runnerVersion), /^\d+\.\d+\.\d+/);

    // A ticket is good for one handshake: the same one again is refused, with the reason named.
    const again = spawnRunnerd(runnerArgs(created, daemon.url, join(dir, `runner-${runId}-again`)), ticket.ticket, dir);
    assert.equal(await again.exited(), 3, again.stderr());
    assert.match(again.stderr(), /credential_used|unknown_credential/);
    assert.match(again.stderr(), /bootstrap_possibly_consumed/);

    // The log is structured, names the run, and holds no secret.
    const log = daemon.log();
    for (const line of log) {
      assert.equal(typeof line.time, "string");
      assert.equal(typeof line.level, "string");
      assert.equal(typeof line.event, "string");
    }
    assert.ok(
      log.some((l) => l.event === "runner.connected" && l.runId === runId),
      JSON.stringify(log),
    );
    assert.equal(daemon.stderr().includes(ticket.ticket), false, "the ticket is not in the daemon's log");
    assert.doesNotMatch(daemon.stderr(), /lease_[0-9a-f]{8}-/, "no lease token in the daemon's log");

    daemon.kill("SIGTERM");
    assert.equal(await daemon.exited(), 0, daemon.stderr());
    assert.deepEqual(
      daemon
        .log()
        .slice(-2)
        .map((l) => l.event),
      ["authority.stopping", "authority.stopped"],
    );

    // Re-opened after the daemon stopped: the whole run log is there, the same events.
    const reopened = SqliteAuthorityStore.open(join(dir, "store"), { serverKey: readServerKeyFile(key) });
    try {
      const logged = await reopened.eventLog(runId, 0, 1000);
      assert.deepEqual(
        logged.map((r) => JSON.parse(r.envelope)),
        events,
      );
      assert.equal((await reopened.run(runId))?.ackedSourceSeq, events.length);
    } finally {
      await reopened.close();
    }
  });

  it("SIGTERM mid-run: the daemon closes the runner's connection (authority_shutdown) and exits 0; restarted on the same store and port, the runner redials and the run finishes with nothing lost", async () => {
    const first = await startDaemon([...store, "--poll-ms", "50"]);
    daemons.push(first);
    const created = admin([
      "authority",
      "run",
      "create",
      "--json",
      "--script",
      "permission-input",
      "--prompt",
      "Play the permission-input script.",
    ]) as { runId: string; identity: { turnId: string }; runnerArgs: string[] };
    const ticket = admin(["authority", "ticket", created.runId, "--json"]) as { ticket: string };
    const runner = spawnRunnerd(
      [
        ...runnerArgs(created, first.url, join(dir, `runner-${created.runId}`)),
        "--delay-ms",
        "0",
        "--reconnect-delay-ms",
        "100",
        ...PATIENT_HARNESS,
      ],
      ticket.ticket,
      dir,
    );
    const committed = () => eventLines(runPrp(["events", "--run", created.runId, "--json", ...store]).stdout);
    await until(
      () => committed().some((e) => e.eventType === "runtime_request.created"),
      () => `the first question; runner: ${runner.stderr()}`,
      60_000,
    );
    const before = committed();

    first.kill("SIGTERM");
    assert.equal(await first.exited(), 0, first.stderr());
    assert.ok(
      first.log().some((l) => l.event === "runner.disconnected" && l.runId === created.runId),
      first.stderr(),
    );
    await until(
      () => /authority_shutdown/.test(runner.stderr()),
      () => `the runner to see the shutdown reason: ${runner.stderr()}`,
    );
    assert.deepEqual(committed(), before, "the store holds what was committed before the stop");

    const second = await startDaemon([...store, "--poll-ms", "50", "--listen", new URL(first.url).host]);
    daemons.push(second);
    const resolve = (payload: Record<string, unknown>) =>
      void admin([
        "authority",
        "command",
        created.runId,
        "request.resolve",
        "--json",
        "--payload",
        JSON.stringify(payload),
      ]);
    await answerWhenAsked(committed, resolve, created.identity.turnId, () => `runner: ${runner.stderr()}`);
    assert.equal(await runner.exited(), 0, runner.stderr());
    const events = committed();
    assert.deepEqual(judgeRun(events), { runTerminalState: "succeeded", problems: [] });
    assert.deepEqual(events.slice(0, before.length), before);
    assert.ok(
      second.log().some((l) => l.event === "runner.connected" && l.runId === created.runId),
      "the runner came back to the restarted daemon",
    );
    second.kill("SIGTERM");
    assert.equal(await second.exited(), 0, second.stderr());
  });

  it("one daemon serves several runs and runners at once, each run whole and on its own", async () => {
    const daemon = await startDaemon([...store, "--poll-ms", "50"]);
    daemons.push(daemon);
    const runs = ["happy-path", "error", "happy-path"].map((script) => {
      const created = admin([
        "authority",
        "run",
        "create",
        "--json",
        "--script",
        script,
        "--prompt",
        `Play the ${script} script.`,
      ]) as { runId: string; runnerArgs: string[] };
      const ticket = admin(["authority", "ticket", created.runId, "--json"]) as { ticket: string };
      return { script, created, ticket: ticket.ticket };
    });
    const runners = runs.map((r) =>
      spawnRunnerd(
        [
          ...runnerArgs(r.created, daemon.url, join(dir, `runner-${r.created.runId}`)),
          "--delay-ms",
          "0",
          ...PATIENT_HARNESS,
        ],
        r.ticket,
        dir,
      ),
    );
    const exits = await Promise.all(runners.map((r) => r.exited()));
    const verdicts = runs.map((r) =>
      judgeRun(eventLines(runPrp(["events", "--run", r.created.runId, "--json", ...store]).stdout)),
    );
    assert.deepEqual(
      verdicts.map((v) => v.problems),
      [[], [], []],
      runners.map((r) => r.stderr()).join("\n"),
    );
    assert.deepEqual(
      verdicts.map((v) => v.runTerminalState),
      ["succeeded", "failed", "succeeded"],
    );
    assert.deepEqual(exits, [0, 0, 0]);
    const connected = daemon
      .log()
      .filter((l) => l.event === "runner.connected")
      .map((l) => l.runId);
    assert.deepEqual([...connected].sort(), runs.map((r) => r.created.runId).sort());
    daemon.kill("SIGTERM");
    assert.equal(await daemon.exited(), 0, daemon.stderr());
  });

  it("prp authority revoke beside the daemon reaches the live runner: it flushes and exits 3", async () => {
    const daemon = await startDaemon([...store, "--poll-ms", "50"]);
    daemons.push(daemon);
    const created = admin([
      "authority",
      "run",
      "create",
      "--json",
      "--script",
      "linger",
      "--prompt",
      "Play the linger script.",
    ]) as { runId: string; runnerArgs: string[] };
    const ticket = admin(["authority", "ticket", created.runId, "--json"]) as { ticket: string };
    const runner = spawnRunnerd(
      [...runnerArgs(created, daemon.url, join(dir, `runner-${created.runId}`)), "--delay-ms", "0", ...PATIENT_HARNESS],
      ticket.ticket,
      dir,
    );
    const committed = () => eventLines(runPrp(["events", "--run", created.runId, "--json", ...store]).stdout);
    await until(
      () => committed().some((e) => e.eventType === "turn.started"),
      () => `the turn to start; runner: ${runner.stderr()}`,
      60_000,
    );
    const revoked = admin(["authority", "revoke", created.runId, "--json"]);
    assert.equal(revoked.revocationEpoch, 1);
    assert.equal(await runner.exited(30_000), 3, runner.stderr());
    assert.match(runner.stderr(), /revoked/);
    daemon.kill("SIGTERM");
    assert.equal(await daemon.exited(), 0, daemon.stderr());
  });

  it("prp demo's store is an authority store: the prp events line it prints reads its run log", () => {
    const demo = runPrp(["demo", "--delay-ms", "0", "--out", join(dir, "demo"), ...PATIENT_HARNESS]);
    assert.equal(demo.status, 0, demo.stderr);
    const line = /^ {2}events {10}prp (events .*)$/m.exec(demo.stdout);
    assert.ok(line, demo.stdout);
    const events = runPrp([...line[1]!.split(" "), "--json"]);
    assert.equal(events.status, 0, events.stderr);
    assert.deepEqual(judgeRun(eventLines(events.stdout)), { runTerminalState: "succeeded", problems: [] });
  });

  it("refusals: no server key, unknown run, malformed payload, a command the contract refuses, a PostgreSQL store that does not answer", () => {
    const noKey = runPrp(["authority", "serve", "--store", `sqlite:${join(dir, "store")}`]);
    assert.equal(noKey.status, 2);
    assert.match(noKey.stderr, /server_key_missing: .*prp authority key --out FILE/);

    // The store must be there: a read command refuses a missing one before it looks for the run.
    const created = admin(["authority", "run", "create", "--json"]) as { runId: string };
    const unknown = runPrp(["authority", "ticket", "run_nobody", ...store]);
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /unknown_run at \/runId: no run run_nobody/);
    assert.equal(unknown.stdout, "", "no ticket printed");
    assert.equal(runPrp(["authority", "command", "run_nobody", "turn.start", ...store]).status, 1);
    assert.equal(runPrp(["events", "--run", "run_nobody", ...store]).status, 1);
    assert.equal(runPrp(["authority", "revoke", "run_nobody", ...store]).status, 1);

    const malformed = runPrp([
      "authority",
      "command",
      created.runId,
      "turn.start",
      "--payload",
      '{"text": "a", "text": "b"}',
      ...store,
    ]);
    assert.equal(malformed.status, 1);
    assert.match(malformed.stderr, /invalid_json at --payload/);
    const notObject = runPrp(["authority", "command", created.runId, "turn.start", "--payload", "[1]", ...store]);
    assert.equal(notObject.status, 1);
    assert.match(notObject.stderr, /invalid_command at \/payload/);
    const unknownType = runPrp(["authority", "command", created.runId, "no.such.command", ...store]);
    assert.equal(unknownType.status, 1);
    assert.match(unknownType.stderr, /invalid_command at \/type/);
    const runs = runPrp(["authority", "runs", "--json", ...store])
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { runId: string; commands: number });
    assert.equal(runs.find((r) => r.runId === created.runId)?.commands, 2, "nothing refused was queued");

    const pg = runPrp([
      "authority",
      "runs",
      "--store",
      "postgres://prp:hunter2@127.0.0.1:1/prp",
      "--server-key-file",
      key,
    ]);
    assert.equal(pg.status, 2);
    assert.match(
      pg.stderr,
      /store_unreachable: postgres:\/\/prp:\*\*\*@127\.0\.0\.1:1\/prp: the PostgreSQL store cannot be opened/,
    );
    assert.doesNotMatch(pg.stderr, /hunter2/);
  });
});
