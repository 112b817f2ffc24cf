import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { canonicalJson } from "../../../src/contract/canonical-json.js";
import { decodeValue } from "../../../src/contract/decode.js";
import { canonicalDigest, sha256Hex } from "../../../src/contract/digest.js";
import { semanticToolBindingError } from "../../../src/contract/fixture-bindings.js";
import { packageRoot } from "../../../src/contract/package-root.js";
import type { HarnessFact } from "../../../src/harness/harness-driver.js";
import { AcpProjection, type AcpInput } from "../../../src/harness/acp/projection.js";
import { formContent, projectForm, questionId } from "../../../src/harness/acp/questions.js";
import { sanitiseInput } from "../../../src/harness/acp/semantic-receipts.js";
import { isSecretKey } from "../../../src/harness/redaction.js";
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
  questionAnswer,
  received,
  sent,
  typesOf,
  update,
  violationOf,
} from "./projection-support.js";

type Obj = Record<string, any>;
const receiptsOf = (facts: HarnessFact[]): Obj[] =>
  eventsOf(facts)
    .filter((e) => e.eventType.startsWith("semantic_tool."))
    .map((e) => ({ type: e.eventType, itemId: e.itemId, ...(e.payload.semantic_tool as Obj) }));
const identity = { runId: CONTEXT.runId, normalizedSessionId: CONTEXT.sessionId };
const toolCall = (id: string, rawInput?: unknown, kind = "execute") =>
  update({
    sessionUpdate: "tool_call",
    toolCallId: id,
    title: "Run",
    kind,
    status: "pending",
    ...(rawInput !== undefined ? { rawInput } : {}),
  });
const toolDone = (id: string, status: "completed" | "failed", extra: Obj = {}) =>
  update({ sessionUpdate: "tool_call_update", toolCallId: id, status, ...extra });
const allowed = (id: number, call = "call_1", rawInput?: unknown): AcpInput[] => [
  permissionRequest(id, { toolCallId: call, ...(rawInput !== undefined ? { rawInput } : {}) }),
  permissionAnswer(id, "allow"),
];

/** Every event passes the codec and the transcript keeps wire.md §7.4's binding rule. */
function checkTranscript(facts: HarnessFact[]): void {
  for (const e of eventsOf(facts)) assert.equal(codecProblem(e), null);
  assert.equal(semanticToolBindingError(envelopes(facts), identity), null);
}

describe("seed 002 rule 3: allowed ACP tool calls become semantic receipts", () => {
  const TABLE: Array<{ name: string; wire: AcpInput[]; receipts: Array<[string, string?]> }> = [
    {
      name: "allowed, then completed → input right after the allow, result succeeded",
      wire: [
        toolCall("call_1", { command: "npm test" }),
        ...allowed(7),
        toolDone("call_1", "completed"),
        promptAnswer("end_turn"),
      ],
      receipts: [["semantic_tool.input"], ["semantic_tool.result", "succeeded"]],
    },
    {
      name: "allowed, then failed → result failed",
      wire: [toolCall("call_1"), ...allowed(7), toolDone("call_1", "failed"), promptAnswer("end_turn")],
      receipts: [["semantic_tool.input"], ["semantic_tool.result", "failed"]],
    },
    {
      name: "allowed, the turn ends with the call still running → result unavailable",
      wire: [toolCall("call_1"), ...allowed(7), promptAnswer("end_turn")],
      receipts: [["semantic_tool.input"], ["semantic_tool.result", "unavailable"]],
    },
    {
      name: "allowed, the turn is cancelled → result unavailable",
      wire: [
        toolCall("call_1"),
        ...allowed(7),
        { kind: "cancelling", why: "cancel", reason: "operator" },
        promptAnswer("cancelled"),
      ],
      receipts: [["semantic_tool.input"], ["semantic_tool.result", "unavailable"]],
    },
    {
      name: "allowed, the agent exits mid-turn → result unavailable",
      wire: [toolCall("call_1"), ...allowed(7), { kind: "exited", exit: "exit code 1", restartable: false }],
      receipts: [["semantic_tool.input"], ["semantic_tool.result", "unavailable"]],
    },
    {
      name: "allowed, the agent is killed and replaced → the call ended with it: unavailable",
      wire: [toolCall("call_1"), ...allowed(7), { kind: "exited", exit: "signal SIGKILL", restartable: true }],
      receipts: [["semantic_tool.input"], ["semantic_tool.result", "unavailable"]],
    },
    {
      name: "allowed for a call never announced, then completed",
      wire: [...allowed(7, "call_9"), toolDone("call_9", "completed"), promptAnswer("end_turn")],
      receipts: [["semantic_tool.input"], ["semantic_tool.result", "succeeded"]],
    },
    {
      name: "allowed after the call already completed → input and result at once",
      wire: [toolCall("call_1"), toolDone("call_1", "completed"), ...allowed(7), promptAnswer("end_turn")],
      receipts: [["semantic_tool.input"], ["semantic_tool.result", "succeeded"]],
    },
    {
      name: "denied → no receipt",
      wire: [
        toolCall("call_1"),
        permissionRequest(7),
        permissionAnswer(7, "reject"),
        toolDone("call_1", "failed"),
        promptAnswer("end_turn"),
      ],
      receipts: [],
    },
    {
      name: "cancelled → no receipt",
      wire: [toolCall("call_1"), permissionRequest(7), permissionAnswer(7, null), promptAnswer("end_turn")],
      receipts: [],
    },
    {
      name: "a tool call nobody asked about → no receipt",
      wire: [toolCall("call_1"), toolDone("call_1", "completed"), promptAnswer("end_turn")],
      receipts: [],
    },
    {
      name: "asked twice, allowed twice with the same input → still one input, one result",
      wire: [
        toolCall("call_1", { a: 1 }),
        ...allowed(7, "call_1", { a: 1 }),
        ...allowed(8, "call_1", { a: 1 }),
        toolDone("call_1", "completed"),
        promptAnswer("end_turn"),
      ],
      receipts: [["semantic_tool.input"], ["semantic_tool.result", "succeeded"]],
    },
    {
      name: "two calls allowed → one pair each",
      wire: [
        toolCall("a"),
        toolCall("b"),
        ...allowed(7, "a"),
        ...allowed(8, "b"),
        toolDone("b", "completed"),
        toolDone("a", "failed"),
        promptAnswer("end_turn"),
      ],
      receipts: [
        ["semantic_tool.input"],
        ["semantic_tool.input"],
        ["semantic_tool.result", "succeeded"],
        ["semantic_tool.result", "failed"],
      ],
    },
  ];
  for (const row of TABLE) {
    it(row.name, () => {
      const facts = projectAll([...opening(), ...row.wire]);
      assert.equal(violationOf(facts), undefined);
      assert.deepEqual(
        receiptsOf(facts).map((r) => (r.outcome ? [r.type, r.outcome] : [r.type])),
        row.receipts,
      );
      checkTranscript(facts);
    });
  }

  it("the input receipt follows the allow at once and carries the sanitised input with its canonical digest", () => {
    const rawInput = { command: "deploy", env: { API_TOKEN: "s3cr3t", region: "eu" } };
    const facts = projectAll([
      ...opening(),
      toolCall("call_1", rawInput),
      ...allowed(7),
      toolDone("call_1", "completed"),
    ]);
    const types = typesOf(facts).slice(4);
    assert.deepEqual(types.slice(1, 4), ["runtime_request.created", "runtime_request.resolved", "semantic_tool.input"]);
    const input = eventsOf(facts).find((e) => e.eventType === "semantic_tool.input")!;
    assert.deepEqual(input.payload.input, { command: "deploy", env: { API_TOKEN: "[redacted]", region: "eu" } });
    const receipt = input.payload.semantic_tool as Obj;
    assert.deepEqual(receipt.content, {
      digest: canonicalDigest(input.payload.input),
      redactionDisposition: "redacted",
      references: [],
    });
    assert.ok(!JSON.stringify(facts).includes("s3cr3t"), "the secret never leaves the projection");
    assert.deepEqual(receipt.correlation, {
      runId: CONTEXT.runId,
      normalizedSessionId: CONTEXT.sessionId,
      turnId: TURN,
      itemId: "tool_call_1",
    });
    assert.equal(input.itemId, "tool_call_1");
    assert.equal(receipt.operationId, "acp.tool.execute");
    assert.equal(receipt.callId, "call_1");
    assert.equal(receipt.idempotencyKey, `acp_call_${sha256Hex(`${CONTEXT.runId}\0call_1`).slice(0, 32)}`);
  });

  it("the result receipt: same operation, key and correlation; the pinned receipt id; the grant that authorised it", () => {
    const facts = projectAll([
      ...opening(),
      toolCall("call_1", { x: 1 }),
      ...allowed(7),
      toolDone("call_1", "completed"),
    ]);
    const [input, result] = receiptsOf(facts);
    for (const k of ["operationId", "idempotencyKey", "correlation", "callId", "content"])
      assert.deepEqual(result![k], input![k], k);
    assert.equal(
      result!.operationReceiptId,
      `semantic_receipt:${sha256Hex(`${CONTEXT.runId}:acp.tool.execute:${input!.idempotencyKey}`).slice(0, 32)}`,
    );
    assert.deepEqual(
      [result!.outcome, result!.code, result!.retryable, result!.authorizationBoundary, result!.auditReceiptId],
      ["succeeded", "completed", false, "grant", "acp_permission_7"],
    );
  });

  it("receipt ids we generate keep the strict semantic_receipt:<32 hex> form, though consumers accept any string", () => {
    const STRICT = /^semantic_receipt:[a-f0-9]{32}$/;
    assert.doesNotMatch(
      "receipt_evals_seeded",
      STRICT,
      "the check refuses the upstream-published form it must tell apart",
    );
    const facts = projectAll([
      ...opening(),
      toolCall("a", { x: 1 }),
      toolCall("b", undefined, "edit"),
      toolCall("c", undefined, "Not A Kind"),
      ...allowed(7, "a"),
      ...allowed(8, "b"),
      ...allowed(9, "c"),
      toolDone("a", "completed"),
      toolDone("b", "failed"),
      promptAnswer("end_turn"),
    ]);
    const results = receiptsOf(facts).filter((r) => r.phase === "result");
    assert.equal(results.length, 3);
    for (const r of results) {
      assert.match(r.operationReceiptId, STRICT, r.callId);
      assert.ok(r.auditReceiptId.length > 0, r.callId);
    }
    assert.equal(new Set(results.map((r) => r.operationReceiptId)).size, 3, "one receipt id per call");
  });

  it("secret keys are read word by word: credentials go, look-alikes stay", () => {
    for (const k of [
      "API_TOKEN",
      "accessToken",
      "api-key",
      "apiKey",
      "private_key",
      "password",
      "Authorization",
      "credentials",
      "client_secret",
    ])
      assert.ok(isSecretKey(k), k);
    for (const k of ["max_tokens", "passthrough", "compass", "path", "keyboard", "tokenizer_name"])
      assert.ok(!isSecretKey(k), k);
    assert.deepEqual(sanitiseInput({ credentials: { user: "u", pass: "p" }, max_tokens: 5 }), {
      input: { credentials: "[redacted]", max_tokens: 5 },
      redacted: true,
    });
  });

  it("an input without secrets is not marked redacted; no input at all digests null", () => {
    assert.deepEqual(sanitiseInput({ path: "a.ts" }), { input: { path: "a.ts" }, redacted: false });
    const facts = projectAll([...opening(), toolCall("call_1"), ...allowed(7)]);
    const input = eventsOf(facts).find((e) => e.eventType === "semantic_tool.input")!;
    assert.equal(input.payload.input, null);
    assert.equal((input.payload.semantic_tool as Obj).content.digest, canonicalDigest(null));
  });

  it("an input over the semantic input limit travels as its size, marked redacted", () => {
    const { input, redacted } = sanitiseInput({ blob: "x".repeat(500 * 1024) });
    assert.equal(redacted, true);
    assert.deepEqual(Object.keys(input as Obj), ["truncated", "bytes"]);
  });

  it("the permission request's own raw input wins over the announced one; the operation follows the kind", () => {
    const facts = projectAll([
      ...opening(),
      toolCall("call_1", undefined, "read"),
      permissionRequest(7, { kind: "read", rawInput: { path: "README.md" } }),
      permissionAnswer(7, "allow"),
    ]);
    const input = eventsOf(facts).find((e) => e.eventType === "semantic_tool.input")!;
    assert.deepEqual(input.payload.input, { path: "README.md" });
    assert.equal((input.payload.semantic_tool as Obj).operationId, "acp.tool.read");
  });

  it("durable mode: the correlation is exactly the run identity, and the receipt events sit on the run's item", () => {
    const projection = new AcpProjection({ ...CONTEXT, identity: { turnId: "turn_durable", itemId: "item_durable" } });
    const facts = projectAll(
      [...opening(), toolCall("call_1"), ...allowed(7), toolDone("call_1", "completed")],
      projection,
    );
    for (const r of receiptsOf(facts)) {
      assert.deepEqual(r.correlation, {
        runId: CONTEXT.runId,
        normalizedSessionId: CONTEXT.sessionId,
        turnId: "turn_durable",
        itemId: "item_durable",
      });
      assert.equal(r.itemId, "item_durable");
    }
  });

  it("the binding oracle can fail: an input without its result, or a result with another key, is caught", () => {
    const facts = projectAll([...opening(), toolCall("call_1"), ...allowed(7), toolDone("call_1", "completed")]);
    const events = envelopes(facts);
    const withoutResult = events.filter((e) => e.eventType !== "semantic_tool.result");
    assert.match(semanticToolBindingError(withoutResult, identity)!.message, /0 result or reconciled receipts/);
    const tampered = events.map((e) =>
      e.eventType === "semantic_tool.result"
        ? { ...e, payload: { semantic_tool: { ...(e.payload as Obj).semantic_tool, idempotencyKey: "other" } } }
        : e,
    );
    assert.match(semanticToolBindingError(tampered, identity)!.message, /different idempotencyKey/);
  });
});

describe("seed 002 rules 4 and 5: ACP form elicitations become question sets", () => {
  const fixture = JSON.parse(readFileSync(join(packageRoot(), "protocol/fixtures/questions/acpx.json"), "utf8")) as {
    cases: Obj[];
  };
  for (const c of fixture.cases) {
    it(`the ACPX question fixture, ${c.name}: native request → question set, response → native content, exactly`, () => {
      const form = projectForm({
        mode: "form",
        message: c.nativeRequest.payload.message,
        requestedSchema: c.nativeRequest.payload.requestedSchema,
      });
      assert.ok(!("error" in form), JSON.stringify(form));
      assert.deepEqual(form.questionSet, c.questionSet);
      assert.deepEqual(formContent(form.fields, c.response), { content: c.nativeResponse.params.content });
    });
  }

  const q = (property: string, spec: Obj, required = false) => {
    const form = projectForm({
      mode: "form",
      message: "m",
      requestedSchema: { type: "object", properties: { [property]: spec }, required: required ? [property] : [] },
    });
    if ("error" in form) return form;
    assert.ok(decodeValue(form.questionSet, { kind: "question-set" }).ok, JSON.stringify(form.questionSet));
    return (form.questionSet.questions as Obj[])[0]!;
  };
  const PROPERTIES: Array<{ name: string; spec: Obj; required?: boolean; expect: Obj }> = [
    {
      name: "string enum → single_select, option-n ids",
      spec: { type: "string", enum: ["a", "b"] },
      expect: {
        answerMode: "single_select",
        options: [
          { id: "option-1", label: "a" },
          { id: "option-2", label: "b" },
        ],
      },
    },
    {
      name: "titled oneOf → single_select with the titles",
      spec: {
        type: "string",
        oneOf: [
          { const: "x", title: "Ex" },
          { const: "y", title: "Why" },
        ],
      },
      expect: {
        answerMode: "single_select",
        options: [
          { id: "option-1", label: "Ex" },
          { id: "option-2", label: "Why" },
        ],
      },
    },
    {
      name: "array of enum → multi_select, defaults recommended",
      spec: { type: "array", items: { type: "string", enum: ["r", "g", "b"] }, default: ["g"] },
      expect: {
        answerMode: "multi_select",
        options: [
          { id: "option-1", label: "r" },
          { id: "option-2", label: "g", recommended: true },
          { id: "option-3", label: "b" },
        ],
      },
    },
    {
      name: "array of titled anyOf → multi_select",
      spec: { type: "array", items: { anyOf: [{ const: "1", title: "One" }] } },
      expect: { answerMode: "multi_select", options: [{ id: "option-1", label: "One" }] },
    },
    {
      name: "boolean → single_select yes/no",
      spec: { type: "boolean", title: "Sure?" },
      expect: {
        answerMode: "single_select",
        header: "Sure?",
        prompt: "Sure?",
        options: [
          { id: "option-1", label: "Yes" },
          { id: "option-2", label: "No" },
        ],
      },
    },
    {
      name: "string with limits → text with textValidation",
      spec: { type: "string", minLength: 2, maxLength: 9, pattern: "^[a-z]+$" },
      expect: { answerMode: "text", textValidation: { minLength: 2, maxLength: 9, pattern: "^[a-z]+$" } },
    },
    {
      name: "number → text, inputType number with bounds",
      spec: { type: "number", minimum: 0.5, maximum: 2 },
      expect: { answerMode: "text", textValidation: { minimum: 0.5, maximum: 2, inputType: "number" } },
    },
    {
      name: "integer → text, inputType integer",
      spec: { type: "integer" },
      expect: { answerMode: "text", textValidation: { inputType: "integer" } },
    },
    {
      name: "an empty title and no description → a prompt that still asks",
      spec: { type: "string", title: "  " },
      expect: { prompt: "What should p be?" },
    },
    {
      name: "required with a default among distinct options → a decision",
      spec: { type: "string", enum: ["a", "b"], default: "b" },
      required: true,
      expect: { intent: "decision", required: true },
    },
    {
      name: "a constraint a question set cannot hold is left out",
      spec: { type: "string", maxLength: 10_000_000 },
      expect: { answerMode: "text" },
    },
  ];
  for (const row of PROPERTIES) {
    it(row.name, () => {
      const question = q("p", row.spec, row.required) as Obj;
      assert.ok(!("error" in question));
      for (const [k, v] of Object.entries(row.expect)) assert.deepEqual(question[k], v, k);
      assert.equal(question.id, questionId(1, "p"));
      if (row.name.includes("left out")) assert.equal(question.textValidation, undefined);
    });
  }
  it("question ids follow wire.md §11.4", () =>
    assert.equal(
      questionId(2, "preferred_name"),
      `field-2-preferred_name-${sha256Hex("preferred_name").slice(0, 12)}`,
    ));
  for (const [name, params] of [
    ["url mode", { mode: "url", url: "https://example.com", elicitationId: "e" }],
    ["no properties", { mode: "form", requestedSchema: { type: "object", properties: {} } }],
    [
      "a property type a question cannot ask",
      { mode: "form", requestedSchema: { type: "object", properties: { o: { type: "object" } } } },
    ],
  ] as const) {
    it(`unsupported: ${name} → an error, nothing asked`, () => assert.ok("error" in projectForm(params as Obj)));
  }

  const SCHEMA = {
    type: "object",
    properties: {
      target: { type: "string", enum: ["staging", "prod"] },
      n: { type: "integer" },
      tags: { type: "array", items: { enum: ["x", "y"] } },
    },
    required: ["target"],
  };
  const ids = { target: questionId(1, "target"), n: questionId(2, "n"), tags: questionId(3, "tags") };

  it("an elicitation → a runtime_request.v2 with the question set and a closed origin; both identities kept", () => {
    const projection = new AcpProjection(CONTEXT);
    const facts = projectAll([...opening(), elicitation("q/1 odd id", SCHEMA)], projection);
    const created = eventsOf(facts).at(-1)!;
    assert.equal(created.eventType, "runtime_request.created");
    const request = created.payload.request as Obj;
    assert.ok(decodeValue(request, { kind: "request" }).ok);
    assert.deepEqual(
      [request.schema, request.type, request.prompt, request.origin, request.turnId],
      [
        "paperclip.runtime_request.v2",
        "input",
        "The agent needs details.",
        { adapter: "acp", method: "elicitation/create" },
        TURN,
      ],
    );
    assert.match(request.requestId, /^acp_question_sha_[a-f0-9]{32}$/);
    assert.deepEqual(created.payload.providerRequest, { id: "q/1 odd id", method: "elicitation/create" });
    assert.equal(projection.providerRequestId(request.requestId), "q/1 odd id");
    assert.equal(codecProblem(created), null);
  });

  it("an absent message falls back to the schema title, then to a prompt that still asks", () => {
    const prompt = (extra: Obj) =>
      (eventsOf(projectAll([...opening(), elicitation(1, SCHEMA, extra)])).at(-1)!.payload.request as Obj).prompt;
    assert.equal(prompt({ message: "", requestedSchema: { ...SCHEMA, title: "Deploy" } }), "Deploy");
    assert.equal(prompt({ message: "  " }), "The agent asks for some details.");
  });

  it("request.resolve answers map back to the exact ACP request: submit → accept with content, decline, cancel", () => {
    const projection = new AcpProjection(CONTEXT);
    projectAll([...opening(), elicitation(4, SCHEMA)], projection);
    const response = {
      schema: "paperclip.question_response.v1",
      answers: {
        [ids.target]: { selectedOptionIds: ["option-2"] },
        [ids.n]: { text: "3" },
        [ids.tags]: { selectedOptionIds: ["option-1", "option-2"] },
      },
    };
    assert.deepEqual(projection.questionAnswer(4, { action: "submit", response }), {
      action: "accept",
      content: { target: "prod", n: 3, tags: ["x", "y"] },
    });
    assert.deepEqual(projection.questionAnswer(4, { action: "decline" }), { action: "decline" });
    assert.deepEqual(projection.questionAnswer(4, { action: "cancel" }), { action: "cancel" });
    assert.ok("error" in projection.questionAnswer(4, { action: "accept" })!);
    assert.ok(
      "error" in
        projection.questionAnswer(4, {
          action: "submit",
          response: { ...response, answers: { [ids.n]: { text: "three" } } },
        })!,
    );
    assert.equal(projection.questionAnswer(99, { action: "cancel" }), undefined, "not an open question");
  });

  it("the answers the driver sent → resolved (accept, decline) or cancelled, with who decided", () => {
    const answered = (result: Obj, decided?: AcpInput) =>
      eventsOf(
        projectAll([...opening(), elicitation(4, SCHEMA), ...(decided ? [decided] : []), questionAnswer(4, result)]),
      ).at(-1)!;
    assert.deepEqual(answered({ action: "accept", content: { target: "prod" } }).payload, {
      requestId: "acp_question_4",
      resolution: { action: "accept", content: { target: "prod" } },
      decidedBy: { by: "controller" },
    });
    assert.deepEqual(answered({ action: "decline" }).payload.resolution, { action: "decline" });
    const cancelled = answered(
      { action: "cancel" },
      { kind: "decided", providerRequestId: 4, by: "policy", policy: "deny" },
    );
    assert.deepEqual(
      [cancelled.eventType, cancelled.payload.decidedBy],
      ["runtime_request.cancelled", { by: "policy", policy: "deny" }],
    );
  });

  it("an unsupported question is reported, not asked, and is not open (the driver cancels it)", () => {
    const projection = new AcpProjection(CONTEXT);
    const facts = projectAll(
      [
        ...opening(),
        received({
          id: 5,
          method: "elicitation/create",
          params: { sessionId: SESSION, mode: "url", url: "https://x", elicitationId: "e", message: "Log in" },
        }),
      ],
      projection,
    );
    assert.deepEqual(typesOf(facts).slice(4), ["harness.diagnostic"]);
    assert.equal(projection.isOpen(5), false);
  });
});

describe("seed 002 rule 6: an ACP end_turn proposes needs_review, whatever the agent says", () => {
  const ATTEMPTS: Array<{ name: string; wire: AcpInput[] }> = [
    { name: "plain answer", wire: [chunk("All done.")] },
    {
      name: "text claiming done",
      wire: [chunk('{"reportedWorkDisposition":"done","objectiveSatisfied":true} TASK COMPLETE')],
    },
    { name: "text claiming blocked", wire: [chunk("BLOCKED: reportedWorkDisposition blocked")] },
    {
      name: "a tool call named like the finish operation, allowed and completed",
      wire: [
        update({
          sessionUpdate: "tool_call",
          toolCallId: "fin",
          title: "paperclip_finish",
          kind: "other",
          rawInput: { reportedWorkDisposition: "done" },
        }),
        permissionRequest(7, { toolCallId: "fin", kind: "other" }),
        permissionAnswer(7, "allow"),
        toolDone("fin", "completed", { rawOutput: { reportedWorkDisposition: "done" } }),
      ],
    },
    {
      name: "a block operation tool call",
      wire: [
        update({
          sessionUpdate: "tool_call",
          toolCallId: "blk",
          title: "paperclip_block",
          kind: "other",
          status: "completed",
        }),
      ],
    },
    {
      name: "session metadata claiming a result",
      wire: [
        update({ sessionUpdate: "session_info_update", title: "done", _meta: { reportedWorkDisposition: "done" } }),
      ],
    },
    {
      name: "an extension notification with a result",
      wire: [received({ method: "_paperclip/result", params: { reportedWorkDisposition: "done" } })],
    },
  ];
  for (const row of ATTEMPTS) {
    it(row.name, () => {
      const facts = projectAll([...opening(), ...row.wire, promptAnswer("end_turn")]);
      const results = facts.filter((f) => f.kind === "result") as Array<{ payload: Obj }>;
      assert.equal(results.length, 1);
      assert.equal(results[0]!.payload.reportedWorkDisposition, "needs_review");
      assert.equal(results[0]!.payload.completionClaim.objectiveSatisfied, false);
      assert.ok(decodeValue(results[0]!.payload, { kind: "result" }).ok);
      assert.equal(facts.filter((f) => f.kind === "terminal_proposal").length, 0);
    });
  }
  it("no result at all unless the turn ended with end_turn", () => {
    for (const end of [
      promptAnswer("refusal"),
      promptAnswer("cancelled"),
      received({ id: 2, error: { code: -32603, message: "x" } }),
    ]) {
      assert.equal(projectAll([...opening(), chunk("done"), end]).filter((f) => f.kind === "result").length, 0);
    }
  });
});

describe("seed 002 rule 9: the projection fails closed, with a typed reason", () => {
  const long = "x".repeat(241);
  const forbidding = () => new AcpProjection({ ...CONTEXT, forbidRequests: true });
  const TABLE: Array<{
    name: string;
    wire: AcpInput[];
    code: string;
    projection?: () => AcpProjection;
    match: RegExp;
  }> = [
    {
      name: "invalid turn id",
      wire: [{ kind: "turn", turnId: "bad turn" }],
      code: "invalid_identity",
      match: /not a valid id/,
    },
    {
      name: "invalid session id (empty)",
      wire: [
        sent(0, "initialize"),
        received({ id: 0, result: { protocolVersion: 1 } }),
        sent(1, "session/new"),
        received({ id: 1, result: { sessionId: "" } }),
      ],
      code: "invalid_identity",
      match: /not a usable identity/,
    },
    {
      name: "an update for another session",
      wire: [...opening(), update({ sessionUpdate: "plan", entries: [] }, "other")],
      code: "invalid_identity",
      match: /not "acp_session_1"/,
    },
    {
      name: "invalid request id (an object)",
      wire: [...opening(), permissionRequest({ a: 1 })],
      code: "invalid_identity",
      match: /not a usable identity/,
    },
    {
      name: "invalid request id (an empty string)",
      wire: [...opening(), elicitation("", { type: "object", properties: { a: { type: "string" } } })],
      code: "invalid_identity",
      match: /not a usable identity/,
    },
    {
      name: "invalid request id (a fraction)",
      wire: [...opening(), permissionRequest(1.5)],
      code: "invalid_identity",
      match: /not a usable identity/,
    },
    {
      name: "invalid tool call id (empty)",
      wire: [...opening(), update({ sessionUpdate: "tool_call", toolCallId: "", title: "t" })],
      code: "invalid_identity",
      match: /tool call id "" is not a usable identity/,
    },
    {
      name: "invalid tool call id (too long)",
      wire: [...opening(), update({ sessionUpdate: "tool_call_update", toolCallId: long })],
      code: "invalid_identity",
      match: /not a usable identity/,
    },
    {
      name: "invalid tool call id in a permission request",
      wire: [...opening(), permissionRequest(3, { toolCallId: "bad\nid" })],
      code: "invalid_identity",
      match: /not a usable identity/,
    },
    {
      name: "a question for another session",
      wire: [
        ...opening(),
        received({
          id: 3,
          method: "elicitation/create",
          params: {
            sessionId: "other",
            mode: "form",
            message: "m",
            requestedSchema: { type: "object", properties: { a: { type: "string" } } },
          },
        }),
      ],
      code: "invalid_identity",
      match: /question for session/,
    },
    {
      name: 'projected request-identity collision (5 and "5")',
      wire: [...opening(), permissionRequest(5), permissionRequest("5")],
      code: "identity_collision",
      match: /already stands for/,
    },
    {
      name: "projected collision across kinds is impossible, a reused open id is not",
      wire: [...opening(), permissionRequest(5), permissionRequest(5)],
      code: "identity_collision",
      match: /already open/,
    },
    {
      name: "a tool call started twice",
      wire: [
        ...opening(),
        update({ sessionUpdate: "tool_call", toolCallId: "c", title: "t" }),
        update({ sessionUpdate: "tool_call", toolCallId: "c", title: "t" }),
      ],
      code: "identity_collision",
      match: /started twice/,
    },
    {
      name: "unstable receipt identity: re-announced with another input",
      wire: [
        ...opening(),
        toolCall("call_1", { cmd: "ls" }),
        ...allowed(7),
        update({ sessionUpdate: "tool_call_update", toolCallId: "call_1", rawInput: { cmd: "rm -rf /" } }),
      ],
      code: "unstable_receipt_identity",
      match: /different input/,
    },
    {
      name: "unstable receipt identity: asked again with another input",
      wire: [
        ...opening(),
        toolCall("call_1", { cmd: "ls" }),
        ...allowed(7),
        permissionRequest(8, { rawInput: { cmd: "rm" } }),
      ],
      code: "unstable_receipt_identity",
      match: /different input/,
    },
    {
      name: "unstable receipt identity: allowed again with another input",
      wire: [
        ...opening(),
        ...allowed(7, "call_1", { cmd: "ls" }),
        permissionRequest(8),
        permissionAnswer(8, "allow"),
        ...allowed(9, "call_1", { cmd: "rm" }),
      ],
      code: "unstable_receipt_identity",
      match: /different input/,
    },
    {
      name: "cross-turn: a second turn",
      wire: [...opening(), { kind: "turn", turnId: "turn_2" }],
      code: "cross_turn_projection",
      match: /cross-turn/,
    },
    {
      name: "cross-turn: an update after the turn ended",
      wire: [...opening(), promptAnswer("end_turn"), chunk("late")],
      code: "cross_turn_projection",
      match: /outside a turn/,
    },
    {
      name: "cross-turn: a permission request outside a turn",
      wire: [...opening().slice(0, 5), permissionRequest(1)],
      code: "cross_turn_projection",
      match: /outside a turn/,
    },
    {
      name: "cross-turn: a question after the turn ended",
      wire: [
        ...opening(),
        promptAnswer("end_turn"),
        elicitation(3, { type: "object", properties: { a: { type: "string" } } }),
      ],
      code: "cross_turn_projection",
      match: /outside a turn/,
    },
    {
      name: "forbid: a permission request",
      projection: forbidding,
      wire: [...opening(), permissionRequest(1)],
      code: "request_forbidden",
      match: /forbid permission policy/,
    },
    {
      name: "forbid: a question",
      projection: forbidding,
      wire: [...opening(), elicitation(1, { type: "object", properties: { a: { type: "string" } } })],
      code: "request_forbidden",
      match: /forbid permission policy/,
    },
    {
      name: "forbid: even a question PRP could not ask",
      projection: forbidding,
      wire: [...opening(), elicitation(1, { type: "object", properties: {} })],
      code: "request_forbidden",
      match: /forbid permission policy/,
    },
    {
      name: "the driver gave up on the agent",
      wire: [...opening(), { kind: "broken", code: "agent_timeout", message: "the agent sent nothing for 5 ms" }],
      code: "agent_timeout",
      match: /sent nothing/,
    },
  ];
  for (const row of TABLE) {
    it(`${row.name} → ${row.code}`, () => {
      const projection = row.projection?.() ?? new AcpProjection(CONTEXT);
      const facts = projectAll(row.wire, projection);
      const v = violationOf(facts);
      assert.ok(v, `expected a violation, got ${typesOf(facts).join(", ")}`);
      assert.equal(v.code, row.code);
      assert.match(v.message, row.match);
      assert.equal(facts.at(-1), v, "nothing is projected after the violation");
      assert.deepEqual(projection.project(chunk("more")), [], "and nothing later");
      assert.equal(projection.isOpen(1), false, "a refused request is not open: the driver cancels it");
    });
  }
  // Not a violation: an agent that speaks another ACP version cannot start the run (a typed agent_start cause).
  for (const [name, result, match] of [
    [
      "a protocol version this client does not speak",
      { protocolVersion: 999999 },
      /version 999999; this client speaks only version 1/,
    ],
    ["no protocol version", { agentCapabilities: {} }, /version undefined/],
  ] as const) {
    it(`initialize answered with ${name} → start_failed unsupported_protocol_version`, () => {
      const projection = new AcpProjection(CONTEXT);
      const facts = projectAll([sent(0, "initialize"), received({ id: 0, result })], projection);
      const failed = facts.find((f) => f.kind === "start_failed");
      assert.equal(failed?.kind === "start_failed" && failed.code, "unsupported_protocol_version");
      assert.match(failed!.message, match);
      assert.equal(facts.at(-1), failed, "nothing is projected after it, not even ready");
      assert.ok(projection.broken);
      assert.deepEqual(projection.project(chunk("more")), [], "and nothing later");
    });
  }
  it("the same wire without the forbid policy asks as usual (the oracle can fail)", () => {
    assert.equal(violationOf(projectAll([...opening(), permissionRequest(1)])), undefined);
    assert.equal(
      violationOf(
        projectAll([
          ...opening(),
          toolCall("call_1", { cmd: "ls" }),
          ...allowed(7),
          update({ sessionUpdate: "tool_call_update", toolCallId: "call_1", rawInput: { cmd: "ls" } }),
        ]),
      ),
      undefined,
      "the same input again is stable",
    );
  });
  it("canonical digests ignore key order: a reordered input is the same identity", () => {
    assert.equal(canonicalJson({ b: 1, a: 2 }), canonicalJson({ a: 2, b: 1 }));
    assert.equal(
      violationOf(
        projectAll([
          ...opening(),
          toolCall("call_1", { a: 1, b: 2 }),
          ...allowed(7),
          update({ sessionUpdate: "tool_call_update", toolCallId: "call_1", rawInput: { b: 2, a: 1 } }),
        ]),
      ),
      undefined,
    );
  });
});
