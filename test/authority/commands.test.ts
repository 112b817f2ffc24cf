import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { defaultCommandId, semanticToolResultCommandId } from "../../src/authority/commands.js";
import { MAX_COMMAND_BYTES, MAX_COMMANDS } from "../../src/authority/limits.js";
import { decodeValue } from "../../src/contract/decode.js";
import { authority, codeOf, connect, event, tempRoot, unwrap, withRun, type Authority } from "./support.js";

async function ready(dir: string, protocolVersion?: number): Promise<Authority> {
  const a = authority(dir);
  await withRun(a, 1, protocolVersion);
  return a;
}

const result = (commandId: string, status: string, value: unknown = { ok: true }) => ({
  commandId,
  status,
  result: value,
});

describe("authority command queue (runtime.md §5.8)", () => {
  const tmp = tempRoot("prp-authority-commands-");
  after(tmp.cleanup);

  it("queues with contiguous controllerSeqs, default ids and contract-valid envelopes", async () => {
    const a = await ready(tmp.dir());
    const queued = [];
    for (const text of ["a", "b", "c"])
      queued.push(unwrap(await a.commands.queueCommand("run_1", "turn.start", { text })));
    assert.deepEqual(
      queued.map((q) => [q.controllerSeq, q.commandId, q.created]),
      [
        [1, "command_prp_00000001", true],
        [2, "command_prp_00000002", true],
        [3, "command_prp_00000003", true],
      ],
    );
    for (const q of queued) {
      assert.equal(q.command.schema, "paperclip.prp.command.v3");
      assert.equal(q.command.issuedAt, new Date(a.clock.now()).toISOString());
      assert.ok(decodeValue(q.command, { kind: "command" }).ok);
    }
    assert.equal(defaultCommandId(12), "command_prp_00000012");
    assert.match(semanticToolResultCommandId("run_1", "call_1"), /^command_tool_[0-9a-f]{32}$/);
    assert.equal(semanticToolResultCommandId("run_1", "call_1"), semanticToolResultCommandId("run_1", "call_1"));
    assert.notEqual(semanticToolResultCommandId("run_1", "call_1"), semanticToolResultCommandId("run_1", "call_2"));
    await a.store.close();
  });

  it("builds envelopes for the run's protocol version and refuses a command that version lacks", async () => {
    const a = await ready(tmp.dir(), 1);
    assert.equal(
      unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "go" })).command.schema,
      "paperclip.prp.command.v1",
    );
    assert.equal(
      codeOf(await a.commands.queueCommand("run_1", "session.goal.get", {})),
      "command_needs_newer_version",
      "session.goal.* needs v2, refused by name",
    );
    await a.store.close();
  });

  it("re-queueing an id is idempotent with the same type and canonical payload, and refused otherwise", async () => {
    const a = await ready(tmp.dir());
    const first = unwrap(
      await a.commands.queueCommand("run_1", "turn.start", { text: "go", options: { a: 1, b: 2 } }, "cmd_start"),
    );
    a.clock.advance(1_000);
    const again = unwrap(
      await a.commands.queueCommand("run_1", "turn.start", { options: { b: 2, a: 1 }, text: "go" }, "cmd_start"),
    );
    assert.equal(again.created, false);
    assert.deepEqual(again.command, first.command, "the stored envelope, issuedAt included");
    assert.equal(
      codeOf(await a.commands.queueCommand("run_1", "turn.start", { text: "other" }, "cmd_start")),
      "command_conflict",
    );
    assert.equal(
      codeOf(
        await a.commands.queueCommand("run_1", "turn.steer", { text: "go", options: { a: 1, b: 2 } }, "cmd_start"),
      ),
      "command_conflict",
    );
    // A caller-chosen id that is the next default id makes the default one collide.
    unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "x" }, "command_prp_00000003"));
    assert.equal(codeOf(await a.commands.queueCommand("run_1", "turn.start", { text: "y" })), "command_conflict");
    assert.equal((await a.store.run("run_1"))!.commandCount, 2);
    await a.store.close();
  });

  it("refuses a command for a run whose run.terminal is committed; a re-queue of a stored id still answers", async () => {
    const a = await ready(tmp.dir());
    const first = unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "a" }, "command_a"));
    const conn = (await connect(a)).connectionId;
    const terminal = event(1, 1, { eventType: "run.terminal" });
    unwrap(
      await a.store.commitEvent(
        "run_1",
        conn,
        {
          sourceSeq: 1,
          sourceEventId: terminal.sourceEventId as string,
          eventType: "run.terminal",
          priority: terminal.priority as number,
          envelope: JSON.stringify(terminal),
        },
        a.clock.now(),
      ),
    );
    const refused = await a.commands.queueCommand("run_1", "run.cancel", {});
    assert.equal(codeOf(refused), "run_ended");
    assert.equal((await a.store.commands("run_1")).length, 1, "nothing queued");
    assert.equal(
      unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "a" }, "command_a")).controllerSeq,
      first.controllerSeq,
    );
  });

  it("refuses bad input, an oversize command and the 501st command", async () => {
    const a = await ready(tmp.dir());
    assert.equal(codeOf(await a.commands.queueCommand("run_1", "no.such.command", {})), "invalid_command");
    assert.equal(
      codeOf(await a.commands.queueCommand("run_1", "turn.start", [] as unknown as object)),
      "invalid_command",
    );
    assert.equal(codeOf(await a.commands.queueCommand("run_1", "turn.start", { n: Number.NaN })), "invalid_command");
    assert.equal(codeOf(await a.commands.queueCommand("run_1", "turn.start", {}, "bad\nid")), "invalid_command");
    assert.equal(codeOf(await a.commands.queueCommand("run_9", "turn.start", {})), "unknown_run");
    const overhead =
      Buffer.byteLength(
        JSON.stringify(unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "" })).command),
      ) - 0;
    const fits = MAX_COMMAND_BYTES - overhead + 1; // the envelope above held controllerSeq 1; the next one has the same width
    const atLimit = unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "x".repeat(fits - 1) }));
    assert.equal(
      Buffer.byteLength(JSON.stringify(atLimit.command)),
      MAX_COMMAND_BYTES,
      "exactly at the limit is accepted",
    );
    assert.equal(
      codeOf(await a.commands.queueCommand("run_1", "turn.start", { text: "x".repeat(fits) })),
      "command_too_large",
    );
    for (let i = 3; i <= MAX_COMMANDS; i++)
      unwrap(await a.commands.queueCommand("run_1", "turn.steer", { text: `${i}` }));
    assert.equal(
      codeOf(await a.commands.queueCommand("run_1", "turn.steer", { text: "one too many" })),
      "command_queue_full",
    );
    assert.equal((await a.store.run("run_1"))!.commandCount, MAX_COMMANDS);
    await a.store.close();
  });

  it("delivers only the lowest pending command, counts deliveries and releases the next after its result", async () => {
    const a = await ready(tmp.dir());
    for (const text of ["one", "two"]) unwrap(await a.commands.queueCommand("run_1", "turn.start", { text }));
    const conn = (await connect(a)).connectionId;
    const first = unwrap(await a.commands.nextCommandToDeliver("run_1", conn))!;
    assert.deepEqual([first.command.commandId, first.deliveryCount], ["command_prp_00000001", 1]);
    assert.equal(
      unwrap(await a.commands.nextCommandToDeliver("run_1", conn)),
      null,
      "in flight on this connection: nothing else is sent",
    );
    assert.equal(
      codeOf(await a.commands.acceptCommandResult("run_1", conn, result("command_prp_00000002", "completed"))),
      "command_not_delivered",
    );
    const repeated = unwrap(await a.commands.nextCommandToDeliver("run_1", conn, { repeat: true }))!;
    assert.deepEqual(repeated, { ...first, deliveryCount: 2 }, "a repeat is the same bytes");
    const conn2 = (await connect(a)).connectionId;
    assert.equal(
      unwrap(await a.commands.nextCommandToDeliver("run_1", conn2))!.deliveryCount,
      3,
      "a new connection gets it again",
    );
    assert.equal(codeOf(await a.commands.nextCommandToDeliver("run_1", conn)), "connection_superseded");
    const accepted = unwrap(
      await a.commands.acceptCommandResult("run_1", conn2, {
        ...result("command_prp_00000001", "completed"),
        controllerSeq: 1,
        type: "turn.start",
      }),
    );
    assert.deepEqual(accepted, {
      commandId: "command_prp_00000001",
      status: "completed",
      duplicate: false,
      needsResultAck: false,
    });
    const second = unwrap(await a.commands.nextCommandToDeliver("run_1", conn2))!;
    assert.equal(second.command.commandId, "command_prp_00000002");
    assert.deepEqual((await a.store.run("run_1"))!.commandDeliveryCounts, {
      command_prp_00000001: 3,
      command_prp_00000002: 1,
    });
    await a.store.close();
  });

  it("accepts indeterminate as terminal, counts an equal repeat and refuses a changed one", async () => {
    const a = await ready(tmp.dir());
    unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "one" }));
    unwrap(await a.commands.queueCommand("run_1", "runner.shutdown", {}));
    const conn = (await connect(a)).connectionId;
    unwrap(await a.commands.nextCommandToDeliver("run_1", conn));
    const indeterminate = result("command_prp_00000001", "indeterminate", { code: "execution_indeterminate" });
    assert.equal(unwrap(await a.commands.acceptCommandResult("run_1", conn, indeterminate)).duplicate, false);
    assert.equal(
      unwrap(await a.commands.nextCommandToDeliver("run_1", conn))!.command.commandId,
      "command_prp_00000002",
      "indeterminate is terminal: the queue moves on",
    );
    const repeat = unwrap(
      await a.commands.acceptCommandResult("run_1", conn, {
        result: { code: "execution_indeterminate" },
        status: "indeterminate",
        commandId: "command_prp_00000001",
      }),
    );
    assert.equal(repeat.duplicate, true);
    assert.equal((await a.store.run("run_1"))!.duplicateCommandResults, 1);
    assert.equal(
      codeOf(await a.commands.acceptCommandResult("run_1", conn, result("command_prp_00000001", "completed"))),
      "command_result_mismatch",
    );
    assert.equal(
      codeOf(
        await a.commands.acceptCommandResult(
          "run_1",
          conn,
          result("command_prp_00000001", "indeterminate", { code: "other" }),
        ),
      ),
      "command_result_mismatch",
    );
    assert.equal(
      codeOf(await a.commands.acceptCommandResult("run_1", conn, { ...indeterminate, type: "turn.steer" })),
      "command_result_mismatch",
    );
    const shutdown = unwrap(
      await a.commands.acceptCommandResult("run_1", conn, result("command_prp_00000002", "completed")),
    );
    assert.equal(shutdown.needsResultAck, true, "runner.shutdown gets a command_result_ack");
    assert.equal(unwrap(await a.commands.nextCommandToDeliver("run_1", conn)), null);
    const statuses = (await a.commands.commands("run_1")).map((c) => c.status);
    assert.deepEqual(statuses, ["indeterminate", "completed"]);
    await a.store.close();
  });

  it("refuses a result with another status, an unknown command or no object", async () => {
    const a = await ready(tmp.dir());
    unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "one" }));
    const conn = (await connect(a)).connectionId;
    unwrap(await a.commands.nextCommandToDeliver("run_1", conn));
    for (const status of ["accepted", "duplicate", "pending", undefined]) {
      assert.equal(
        codeOf(await a.commands.acceptCommandResult("run_1", conn, result("command_prp_00000001", status as string))),
        "invalid_command_result",
        String(status),
      );
    }
    assert.equal(codeOf(await a.commands.acceptCommandResult("run_1", conn, "completed")), "invalid_command_result");
    assert.equal(
      codeOf(await a.commands.acceptCommandResult("run_1", conn, result("command_unknown", "completed"))),
      "unknown_command",
    );
    assert.equal((await a.commands.commands("run_1"))[0]!.status, null, "nothing recorded");
    assert.ok((await a.store.diagnostics("run_1")).some((d) => d.code === "invalid_command_result"));
    await a.store.close();
  });

  it("keeps the queue, deliveries and results across a restart", async () => {
    const dir = tmp.dir();
    const a = await ready(dir);
    unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "one" }));
    unwrap(await a.commands.queueCommand("run_1", "turn.start", { text: "two" }));
    const conn = (await connect(a)).connectionId;
    unwrap(await a.commands.nextCommandToDeliver("run_1", conn));
    unwrap(await a.commands.acceptCommandResult("run_1", conn, result("command_prp_00000001", "completed")));
    await a.store.close();
    const b = authority(dir);
    const conn2 = (await connect(b)).connectionId;
    const next = unwrap(await b.commands.nextCommandToDeliver("run_1", conn2))!;
    assert.equal(next.command.commandId, "command_prp_00000002");
    assert.equal(
      unwrap(await b.commands.acceptCommandResult("run_1", conn2, result("command_prp_00000001", "completed")))
        .duplicate,
      true,
      "a late repeat after the restart",
    );
    assert.equal(unwrap(await b.commands.queueCommand("run_1", "turn.start", { text: "three" })).controllerSeq, 3);
    await b.store.close();
  });
});
