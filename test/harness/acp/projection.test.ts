import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { decodeValue } from "../../../src/contract/decode.js";
import { AcpProjection, type AcpInput } from "../../../src/harness/acp/projection.js";
import type { HarnessFact } from "../../../src/harness/harness-driver.js";
import { semanticToolBindingError } from "../../../src/contract/fixture-bindings.js";
import {
  CONTEXT,
  SESSION,
  TURN,
  chunk,
  codecProblem,
  elicitation,
  envelopes,
  eventsOf,
  opening,
  permissionAnswer,
  permissionRequest,
  projectAll,
  promptAnswer,
  promptError,
  questionAnswer,
  received,
  sent,
  typesOf,
  update,
} from "./projection-support.js";

const diffUpdate = {
  sessionUpdate: "tool_call_update",
  toolCallId: "call_1",
  status: "completed",
  content: [{ type: "diff", path: "/workspace/src/a.ts", oldText: "a\nb", newText: "a\nc\nd" }],
};

/** The mapping table: ACP in, the PRP facts that must follow the opening, in order. */
const TABLE: Array<{ name: string; wire: AcpInput[]; expect: string[] }> = [
  {
    name: "message chunks → one assistant item, deltas, completed at turn end, turn.completed and a result",
    wire: [chunk("Hello, "), chunk("world"), promptAnswer("end_turn")],
    expect: ["item.started", "item.delta", "item.delta", "item.completed", "turn.completed", "result"],
  },
  {
    name: "thought chunks → a reasoning item",
    wire: [chunk("hmm", "agent_thought_chunk"), promptAnswer("end_turn")],
    expect: ["item.started", "item.delta", "item.completed", "turn.completed", "result"],
  },
  {
    name: "tool_call → started; updates → progressed, completed; a diff → workspace.change.updated",
    wire: [
      update({ sessionUpdate: "tool_call", toolCallId: "call_1", title: "Edit", kind: "edit", status: "pending" }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "call_1", status: "in_progress" }),
      update(diffUpdate),
    ],
    expect: [
      "tool.execution.started",
      "tool.execution.progressed",
      "tool.execution.completed",
      "workspace.change.updated",
    ],
  },
  {
    name: "plan → plan.updated",
    wire: [update({ sessionUpdate: "plan", entries: [{ content: "a", priority: "high", status: "pending" }] })],
    expect: ["plan.updated"],
  },
  {
    name: "mode, commands, config, session info → session.updated",
    wire: [
      update({ sessionUpdate: "current_mode_update", currentModeId: "code" }),
      update({ sessionUpdate: "available_commands_update", availableCommands: [] }),
      update({ sessionUpdate: "config_option_update", configOptions: [] }),
      update({ sessionUpdate: "session_info_update", title: "t" }),
    ],
    expect: ["session.updated", "session.updated", "session.updated", "session.updated"],
  },
  {
    name: "notice → provider.notice.recorded",
    wire: [
      update({ sessionUpdate: "notice", severity: "warning", title: "Rate limited", description: "slowing down" }),
    ],
    expect: ["provider.notice.recorded"],
  },
  {
    name: "cancelled after an interrupt → turn.interrupted",
    wire: [{ kind: "cancelling", why: "interrupt", reason: "operator" }, promptAnswer("cancelled")],
    expect: ["turn.interrupted"],
  },
  {
    name: "cancelled after run.cancel → turn.cancelled",
    wire: [{ kind: "cancelling", why: "cancel", reason: "operator" }, promptAnswer("cancelled")],
    expect: ["turn.cancelled"],
  },
  { name: "max_tokens → turn.failed", wire: [promptAnswer("max_tokens")], expect: ["turn.failed"] },
  { name: "max_turn_requests → turn.failed", wire: [promptAnswer("max_turn_requests")], expect: ["turn.failed"] },
  { name: "refusal → turn.failed", wire: [promptAnswer("refusal")], expect: ["turn.failed"] },
  { name: "a JSON-RPC error → turn.failed", wire: [promptError(-32603, "boom")], expect: ["turn.failed"] },
  {
    name: "an update the SDK drops → harness.diagnostic",
    wire: [update({ sessionUpdate: "telepathy" }), update({ sessionUpdate: "tool_call", title: "no id" })],
    expect: ["harness.diagnostic", "harness.diagnostic"],
  },
  {
    name: "an unknown _ notification → harness.diagnostic",
    wire: [received({ method: "_vendor/x", params: {} })],
    expect: ["harness.diagnostic"],
  },
  {
    name: "a line that is not JSON → harness.diagnostic",
    wire: [{ kind: "unparsable", text: "Loading model…" }],
    expect: ["harness.diagnostic"],
  },
  {
    name: "a request the client does not offer → harness.diagnostic",
    wire: [received({ id: 9, method: "fs/read_text_file", params: {} })],
    expect: ["harness.diagnostic"],
  },
  {
    name: "a permission request → runtime_request.created; the answer → .resolved; allowed → a semantic input receipt",
    wire: [
      permissionRequest(7),
      { kind: "decided", providerRequestId: 7, by: "controller" },
      {
        kind: "sent",
        message: { jsonrpc: "2.0", id: 7, result: { outcome: { outcome: "selected", optionId: "allow" } } },
      },
    ],
    expect: ["runtime_request.created", "runtime_request.resolved", "semantic_tool.input"],
  },
  {
    name: "a permission answered cancelled → runtime_request.cancelled",
    wire: [
      permissionRequest(7),
      { kind: "sent", message: { jsonrpc: "2.0", id: 7, result: { outcome: { outcome: "cancelled" } } } },
    ],
    expect: ["runtime_request.created", "runtime_request.cancelled"],
  },
];

describe("ACP projection: the mapping table", () => {
  it("projects the opening: ready with the agent's info, session.started, executing, turn.started", () => {
    const facts = projectAll(opening({ loadSession: true }));
    assert.deepEqual(typesOf(facts), ["ready", "session.started", "runtime.phase.changed", "turn.started"]);
    const ready = facts[0] as { pid: number; agent: Record<string, unknown> };
    assert.equal(ready.pid, 4242);
    assert.deepEqual(
      [
        ready.agent.name,
        ready.agent.version,
        ready.agent.authMethods,
        (ready.agent.capabilities as Record<string, unknown>).loadSession,
      ],
      ["agent", "1.2.3", ["login"], true],
    );
    assert.deepEqual(eventsOf(facts)[0]!.payload, { driverSessionId: SESSION });
  });

  for (const row of TABLE) {
    it(row.name, () => {
      const all = projectAll([...opening(), ...row.wire]);
      const facts = all.slice(4);
      assert.deepEqual(typesOf(facts), row.expect);
      for (const e of eventsOf(all)) assert.equal(codecProblem(e), null);
      for (const e of eventsOf(facts)) if (e.eventType !== "harness.diagnostic") assert.equal(e.turnId, TURN);
      // A tool call is one item: its executions and diffs carry its execution id as item id.
      for (const e of eventsOf(facts)) {
        if (e.eventType.startsWith("tool.execution.")) assert.equal(e.itemId, e.payload.executionId, e.eventType);
        if (e.eventType === "workspace.change.updated")
          assert.ok(e.itemId && String(e.payload.diffId).startsWith(`${e.itemId}_diff_`), `${e.eventType} ${e.itemId}`);
      }
    });
  }

  it("flushes the assistant message on the final channel with the whole text, and proposes it as the result", () => {
    const facts = projectAll([...opening(), chunk("Hello, "), chunk("world"), promptAnswer("end_turn")]);
    const completed = eventsOf(facts).find((e) => e.eventType === "item.completed")!;
    assert.deepEqual(completed.payload, { kind: "assistant_message", text: "Hello, world", channel: "final" });
    const result = facts.find((f) => f.kind === "result") as { payload: Record<string, unknown> };
    assert.equal(result.payload.summary, "Hello, world");
    assert.ok(decodeValue(result.payload, { kind: "result" }).ok);
  });

  it("reports the authentication error as something a person can act on", () => {
    const failed = eventsOf(projectAll([...opening(), promptError(-32000, "Authentication required")])).at(-1)!;
    assert.equal(failed.eventType, "turn.failed");
    assert.equal(failed.payload.code, "authentication_required");
    assert.match(String(failed.payload.message), /^authentication required: log the agent in/);
  });

  it("session/new refused → session.failed with the reason; no session.started", () => {
    const facts = projectAll([
      { kind: "spawned", pid: 1 },
      sent(0, "initialize"),
      received({ id: 0, result: { protocolVersion: 1 } }),
      sent(1, "session/new"),
      received({ id: 1, error: { code: -32000, message: "Authentication required" } }),
    ]);
    assert.deepEqual(typesOf(facts), ["ready", "session.failed"]);
    assert.equal(eventsOf(facts)[0]!.payload.code, "authentication_required");
  });

  it("session/load → session.resuming, session.resumed; the replayed history is not reported again", () => {
    const facts = projectAll([
      { kind: "spawned", pid: 1 },
      sent(0, "initialize"),
      received({ id: 0, result: { protocolVersion: 1 } }),
      sent(1, "session/load", { sessionId: "old_1" }),
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "old" } }, "old_1"),
      received({ id: 1, result: {} }),
    ]);
    assert.deepEqual(typesOf(facts), ["ready", "session.resuming", "session.resumed", "runtime.phase.changed"]);
  });

  it("plan snapshots count their revision up", () => {
    const plan = (status: string) =>
      update({ sessionUpdate: "plan", entries: [{ content: "a", priority: "high", status }] });
    const plans = eventsOf(projectAll([...opening(), plan("pending"), plan("completed")])).filter(
      (e) => e.eventType === "plan.updated",
    );
    assert.deepEqual(
      plans.map((p) => [p.payload.revision, p.payload.complete]),
      [
        [1, false],
        [2, true],
      ],
    );
  });

  it("maps tool kinds to operations (other → unknown) and diff paths relative to the cwd", () => {
    const kinds = ["read", "search", "execute", "edit", "other", "think"].map((kind, i) =>
      update({ sessionUpdate: "tool_call", toolCallId: `c${i}`, title: kind, kind }),
    );
    const ops = eventsOf(projectAll([...opening(), ...kinds]))
      .filter((e) => e.eventType.startsWith("tool."))
      .map((e) => e.payload.operation);
    assert.deepEqual(ops, ["read", "search", "execute", "edit", "unknown", "unknown"]);
    const diff = eventsOf(projectAll([...opening(), update(diffUpdate)])).find(
      (e) => e.eventType === "workspace.change.updated",
    )!;
    assert.deepEqual((diff.payload.files as unknown[])[0], {
      path: "src/a.ts",
      changeKind: "modified",
      previousPath: null,
      additions: 3,
      deletions: 2,
    });
  });

  it("keeps both request identities: the projected id for PRP, the provider's id for the answer", () => {
    const projection = new AcpProjection(CONTEXT);
    const created = eventsOf(projectAll([...opening(), permissionRequest("req/7 with spaces")], projection)).at(-1)!;
    const request = created.payload.request as { requestId: string; choices: unknown };
    assert.match(request.requestId, /^acp_permission_sha_[a-f0-9]{32}$/);
    assert.deepEqual(created.payload.providerRequest, {
      id: "req/7 with spaces",
      method: "session/request_permission",
    });
    assert.equal(projection.providerRequestId(request.requestId), "req/7 with spaces");
    assert.deepEqual(request.choices, [
      { key: "allow", label: "Allow" },
      { key: "deny", label: "Reject" },
    ]);
  });

  it("records who decided a permission: the policy's choice is an event, never silent", () => {
    const resolved = eventsOf(
      projectAll([
        ...opening(),
        permissionRequest(7),
        { kind: "decided", providerRequestId: 7, by: "policy", policy: "deny" },
        {
          kind: "sent",
          message: { jsonrpc: "2.0", id: 7, result: { outcome: { outcome: "selected", optionId: "reject" } } },
        },
      ]),
    ).at(-1)!;
    assert.deepEqual(resolved.payload, {
      requestId: "acp_permission_7",
      resolution: { optionId: "reject", optionKind: "reject_once", allowed: false },
      decidedBy: { by: "policy", policy: "deny" },
    });
  });
});

describe("ACP projection: a request lives no longer than its agent and its turn", () => {
  const cancelled = (facts: HarnessFact[]) =>
    eventsOf(facts)
      .filter((e) => e.eventType === "runtime_request.cancelled")
      .map((e) => [e.payload.requestId, e.payload.reason]);

  it("a replacement agent's request ids carry its generation: the same JSON-RPC id never projects to the same PRP id", () => {
    const ids = [1, 2, 3].map((generation) => {
      const facts = projectAll([...opening(), permissionRequest(5)], new AcpProjection({ ...CONTEXT, generation }));
      return (
        eventsOf(facts).find((e) => e.eventType === "runtime_request.created")!.payload.request as Record<
          string,
          unknown
        >
      ).requestId;
    });
    assert.deepEqual(ids, ["acp_permission_5", "acp_permission_5_r1", "acp_permission_5_r2"]);
  });

  it("the agent exits: every open request is cancelled, as an event, and its answer is no longer taken", () => {
    const projection = new AcpProjection(CONTEXT);
    const facts = projectAll(
      [
        ...opening(),
        permissionRequest(5),
        permissionRequest(6, { toolCallId: "call_2" }),
        { kind: "exited", exit: "signal SIGKILL", restartable: true },
      ],
      projection,
    );
    assert.deepEqual(cancelled(facts), [
      ["acp_permission_5", "the agent process that asked it is gone (signal SIGKILL)"],
      ["acp_permission_6", "the agent process that asked it is gone (signal SIGKILL)"],
    ]);
    assert.equal(
      projection.providerRequestId("acp_permission_5"),
      undefined,
      "a resolve for it finds nothing to answer",
    );
  });

  it("the turn ends: every open request is cancelled before the turn's end", () => {
    const facts = projectAll([
      ...opening(),
      permissionRequest(5),
      elicitation(6, { type: "object", properties: { a: { type: "string" } } }),
      promptAnswer("end_turn"),
    ]);
    assert.deepEqual(
      cancelled(facts).map(([id]) => id),
      ["acp_permission_5", "acp_question_6"],
    );
    const types = typesOf(facts);
    assert.ok(types.lastIndexOf("runtime_request.cancelled") < types.indexOf("turn.completed"), types.join(", "));
  });

  it("an agent the driver ended while it would not settle a cancel: the turn ends interrupted, not failed", () => {
    const facts = projectAll([
      ...opening(),
      chunk("busy"),
      { kind: "cancelling", why: "interrupt", reason: "operator" },
      { kind: "exited", exit: "signal SIGTERM", restartable: false },
    ]);
    const end = eventsOf(facts)
      .filter((e) => e.eventType.startsWith("turn."))
      .at(-1)!;
    assert.equal(end.eventType, "turn.interrupted");
    assert.equal(end.payload.reason, "operator");
  });
});

describe("ACP projection: fail closed (seed 002 rule 9)", () => {
  const violation = (wire: AcpInput[]) => {
    const facts = projectAll(wire);
    const v = facts.find((f) => f.kind === "violation") as { message: string } | undefined;
    assert.ok(v, `expected a violation, got ${typesOf(facts).join(", ")}`);
    return v.message;
  };
  it("an invalid turn identity", () =>
    assert.match(violation([{ kind: "turn", turnId: "bad turn id" }]), /not a valid id/));
  it("a second turn (cross-turn projection)", () =>
    assert.match(violation([...opening(), { kind: "turn", turnId: "turn_2" }]), /cross-turn/));
  it("an update after the turn ended (cross-turn projection)", () =>
    assert.match(violation([...opening(), promptAnswer("end_turn"), chunk("late")]), /outside a turn/));
  it("an update for another session", () =>
    assert.match(
      violation([...opening(), chunk("x"), update({ sessionUpdate: "plan", entries: [] }, "other_session")]),
      /not "acp_session_1"/,
    ));
  it("an agent session id that is not a usable identity", () =>
    assert.match(
      violation([
        sent(0, "initialize"),
        received({ id: 0, result: { protocolVersion: 1 } }),
        sent(1, "session/new"),
        received({ id: 1, result: { sessionId: "" } }),
      ]),
      /not a usable identity/,
    ));
  it('a projected request-identity collision (5 and "5")', () =>
    assert.match(violation([...opening(), permissionRequest(5), permissionRequest("5")]), /already stands for/));
  it("a projected tool-identity collision is impossible for distinct safe ids but a restarted tool call fails", () => {
    assert.match(
      violation([
        ...opening(),
        update({ sessionUpdate: "tool_call", toolCallId: "c", title: "t" }),
        update({ sessionUpdate: "tool_call", toolCallId: "c", title: "t" }),
      ]),
      /started twice/,
    );
  });
  it("a permission request outside a turn", () =>
    assert.match(violation([...opening().slice(0, 5), permissionRequest(1)]), /outside a turn/));
  it("initialize refused", () =>
    assert.match(
      violation([sent(0, "initialize"), received({ id: 0, error: { code: -32603, message: "no" } })]),
      /refused initialize/,
    ));
  it("after a violation nothing more is projected", () => {
    const projection = new AcpProjection(CONTEXT);
    projectAll([{ kind: "turn", turnId: "bad turn" }], projection);
    assert.deepEqual(projection.project(chunk("x")), []);
  });
});

describe("ACP projection: determinism (property)", () => {
  const one = (a: fc.Arbitrary<AcpInput>) => a.map((input) => [input]);
  const questionKinds = fc.constantFrom<Record<string, unknown>>(
    { type: "string", enum: ["a", "b"] },
    { type: "integer" },
    { type: "array", items: { enum: ["x"] } },
    { type: "boolean" },
    { type: "object" },
  );
  const wireArb = fc
    .array(
      fc.oneof(
        one(fc.string({ maxLength: 12 }).map((t) => chunk(t))),
        one(fc.string({ maxLength: 12 }).map((t) => chunk(t, "agent_thought_chunk"))),
        one(
          fc
            .record({
              id: fc.constantFrom("a", "b", "c"),
              kind: fc.constantFrom("read", "edit", "execute", "other"),
              status: fc.constantFrom("pending", "in_progress", "completed", "failed"),
              input: fc.constantFrom(undefined, { cmd: "ls" }),
            })
            .map(({ id, kind, status, input }) =>
              update({
                sessionUpdate: "tool_call_update",
                toolCallId: id,
                kind,
                status,
                ...(input ? { rawInput: input } : {}),
              }),
            ),
        ),
        one(
          fc
            .constantFrom("pending", "completed")
            .map((status) => update({ sessionUpdate: "plan", entries: [{ content: "x", priority: "low", status }] })),
        ),
        one(fc.constant(update({ sessionUpdate: "telepathy" }))),
        one(fc.integer({ min: 1, max: 3 }).map((id) => permissionRequest(id))),
        // A permission for a generated call, with a raw input, answered at once: allowed ones get receipts.
        fc
          .record({
            id: fc.integer({ min: 10, max: 60 }),
            call: fc.constantFrom("a", "b", "c"),
            input: fc.constantFrom(undefined, { cmd: "ls" }, { cmd: "ls", token: "t" }),
            option: fc.constantFrom("allow", "allow", "reject", null),
          })
          .map(({ id, call, input, option }) => [
            permissionRequest(id, { toolCallId: call, ...(input ? { rawInput: input } : {}) }),
            permissionAnswer(id, option),
          ]),
        one(
          fc
            .record({ id: fc.integer({ min: 1, max: 60 }), option: fc.constantFrom("allow", "reject", null) })
            .map(({ id, option }) => permissionAnswer(id, option)),
        ),
        // Form questions of the kinds a question set holds (and one it cannot), answered or left open.
        fc
          .record({
            id: fc.integer({ min: 100, max: 160 }),
            kind: questionKinds,
            action: fc.constantFrom("accept", "decline", "cancel", null),
          })
          .map(({ id, kind, action }) => [
            elicitation(id, { type: "object", properties: { p: kind } }),
            ...(action
              ? [questionAnswer(id, { action, ...(action === "accept" ? { content: { p: "a" } } : {}) })]
              : []),
          ]),
      ),
      { maxLength: 30 },
    )
    .map((steps) => steps.flat());
  const endArb = fc.constantFrom(
    promptAnswer("end_turn"),
    promptAnswer("cancelled"),
    promptAnswer("refusal"),
    promptError(-32000, "auth"),
  );

  it("the same wire always projects to the same facts, every event passes the codec, and receipts bind", () => {
    const seed = 20260807;
    process.stdout.write(`# fast-check seed ${seed}\n`);
    const reached = new Map<string, number>();
    fc.assert(
      fc.property(wireArb, endArb, (middle, end) => {
        const wire = [...opening(), ...middle, end];
        const first = projectAll(wire);
        for (const t of new Set(typesOf(first))) reached.set(t, (reached.get(t) ?? 0) + 1);
        assert.deepEqual(projectAll(wire), first);
        for (const e of eventsOf(first)) assert.equal(codecProblem(e), null);
        // Unless it failed closed, every allowed call's receipts keep the binding rule (wire.md §7.4).
        if (!first.some((f) => f.kind === "violation"))
          assert.equal(
            semanticToolBindingError(envelopes(first), {
              runId: CONTEXT.runId,
              normalizedSessionId: CONTEXT.sessionId,
            }),
            null,
          );
      }),
      { seed, numRuns: 300 },
    );
    // The generator reaches the new inputs: receipts, questions and their answers, and failing closed.
    for (const t of [
      "semantic_tool.input",
      "semantic_tool.result",
      "runtime_request.created",
      "runtime_request.resolved",
      "runtime_request.cancelled",
      "violation",
      "result",
    ]) {
      assert.ok((reached.get(t) ?? 0) > 0, `no generated wire projected ${t}`);
    }
  });

  it("the codec oracle can fail: a payload the contract refuses is caught", () => {
    assert.notEqual(
      codecProblem({ kind: "event", eventType: "plan.updated", payload: { schema: "paperclip.plan.updated.v1" } }),
      null,
    );
  });
});
