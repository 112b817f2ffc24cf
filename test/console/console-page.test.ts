import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { actionForChoice } from "../../src/contract/permission-choices.js";
import { judgeRun } from "../cli/authority-run.js";
import { until } from "../support/until.js";
import { liveConsole, postFromPage, WAIT, type LiveConsole } from "./live-console.js";

/** A permission with all four kinds of choice: what "allow always" must be sent as. */
const ALWAYS_SCRIPT = {
  schema: "paperclip.fake_harness.script.v1",
  name: "permission-always",
  description: "Asks permission with allow, allow always, deny and deny always; finishes once answered.",
  steps: [
    {
      kind: "request",
      request: {
        schema: "paperclip.runtime_request.v1",
        requestKind: "runtime",
        requestId: "request_permission_1",
        type: "permission",
        status: "pending",
        prompt: "Edit files in the workspace?",
        choices: [
          { key: "allow", label: "Allow once" },
          { key: "allow_always", label: "Allow always" },
          { key: "deny", label: "Deny" },
          { key: "deny_always", label: "Deny always" },
        ],
      },
    },
    { kind: "await_resolution", request_id: "request_permission_1" },
    {
      kind: "result",
      payload: {
        schema: "paperclip.run_result.v1",
        reportedWorkDisposition: "done",
        summary: "Edited the files.",
        completionClaim: {
          contractRevision: "local-runner-v1",
          objectiveSatisfied: true,
          criteria: [],
          remainingWork: [],
        },
        evidence: [],
        verification: [],
        attentionRequests: [],
        artifacts: [],
      },
    },
    { kind: "event", event_type: "turn.completed", payload: {} },
    {
      kind: "terminal",
      payload: {
        schema: "paperclip.prp.terminal.v1",
        turnTerminalState: "completed",
        runTerminalState: "succeeded",
        reportedWorkDisposition: "done",
      },
    },
    { kind: "exit", code: 0 },
  ],
};

describe("prp console in Chromium: questions, permissions, failures and a run's states", () => {
  let live: LiveConsole;
  before(async () => {
    live = await liveConsole("prp-console-page-");
  });
  after(() => live?.close());

  const openRun = (runId: string) => live.openRun(runId);
  const resolutions = (runId: string) =>
    live
      .committed(runId)
      .filter((e) => e.eventType === "runtime_request.resolved")
      .map((e) => (e.payload as { resolution?: unknown }).resolution);

  it("a structured question set is a form: answered with a question response the runner accepts; the command's status follows; the ended session is not shown running", async () => {
    const { runId, runner } = live.startRun("interactive-question");
    const page = await openRun(runId);
    const form = page.locator('form[data-request-id="request_question_1"]');
    await form.waitFor(WAIT);
    const send = form.getByRole("button", { name: "Send answers" });
    assert.equal(await send.isDisabled(), true, "the required decision is not answered yet");
    await form.getByText(/required question "strategy" is not answered/).waitFor(WAIT);
    await form.getByLabel(/Offline with downtime/).check();
    await form.locator('fieldset[data-question-id="notes"]').getByLabel("Your answer").fill("Tell the on-call first.");
    await send.click();
    // The receipt, then the runner's result: not "Queued" forever.
    await page.getByTestId("command-state").getByText("applied by the runner").waitFor(WAIT);
    await page
      .getByTestId("terminal")
      .getByText(/completed \/ succeeded/)
      .waitFor(WAIT);
    assert.equal(await runner.exited(), 0, runner.stderr());
    assert.deepEqual(judgeRun(live.committed(runId)), { runTerminalState: "succeeded", problems: [] });
    assert.deepEqual(resolutions(runId), [
      {
        action: "submit",
        response: {
          schema: "paperclip.question_response.v1",
          answers: { strategy: { selectedOptionIds: ["offline"] }, notes: { text: "Tell the on-call first." } },
        },
      },
    ]);
    // The script never closes its session: once the run has ended, it is not shown as running.
    await page.getByTestId("run-state").getByText("succeeded").waitFor(WAIT);
    assert.equal(await page.getByTestId("session-state").textContent(), "ended with the run");
    assert.match((await page.getByTestId("turn-state").textContent()) ?? "", /^completed/);
    await page.close();
  });

  it("an ACP agent's form question is a form too: its answer reaches the agent", async () => {
    const { runId, runner } = live.startAgentRun("question");
    const page = await openRun(runId);
    const form = page.locator("form[data-request-id]");
    await form.waitFor(WAIT);
    await form
      .locator('fieldset[data-question-id^="field-1-deploy_target-"]')
      .getByLabel(/production/)
      .check();
    await form
      .locator('fieldset[data-question-id^="field-2-preferred_name-"]')
      .getByLabel("Your answer")
      .fill("winter-release");
    await form.getByRole("button", { name: "Send answers" }).click();
    await page.getByTestId("command-state").getByText("applied by the runner").waitFor(WAIT);
    await page
      .getByTestId("terminal")
      .getByText(/completed \/ succeeded/)
      .waitFor(WAIT);
    assert.equal(await runner.exited(), 0, runner.stderr());
    const events = live.committed(runId);
    const resolvedAt = events.findIndex((e) => e.eventType === "runtime_request.resolved");
    assert.ok(resolvedAt >= 0, events.map((e) => e.eventType).join(", "));
    const after = JSON.stringify(events.slice(resolvedAt + 1));
    assert.ok(
      after.includes("production") && after.includes("winter-release"),
      `the agent echoes the answer it got: ${after.slice(0, 2000)}`,
    );
    await page.close();
  });

  it("an answer that does not fit the question set is refused before it is queued", async () => {
    const { runId, runner } = live.startRun("interactive-question");
    const page = await openRun(runId);
    await page.locator('form[data-request-id="request_question_1"]').waitFor(WAIT);
    const before = live.commandCount(runId);
    const post = (resolution: unknown) =>
      postFromPage(page, runId, { type: "request.resolve", payload: { requestId: "request_question_1", resolution } });
    const asText = await post({ action: "submit", text: "online" });
    assert.deepEqual(
      [asText.status, asText.body.error?.code, asText.body.error?.path],
      [400, "invalid_answer", "/payload/resolution/response"],
    );
    const unknownOption = await post({
      action: "submit",
      response: {
        schema: "paperclip.question_response.v1",
        answers: { strategy: { selectedOptionIds: ["sideways"] } },
      },
    });
    assert.deepEqual([unknownOption.status, unknownOption.body.error?.code], [400, "invalid_answer"]);
    assert.equal(live.commandCount(runId), before, "nothing was queued");
    await page.getByRole("button", { name: "Cancel the run" }).click();
    await page.getByRole("button", { name: "Confirm cancel" }).click();
    await page.getByTestId("run-state").getByText("cancelled").waitFor(WAIT);
    await runner.exited();
    await page.close();
  });

  it('"Allow always" is sent as accept_for_session, chosen by the person: nothing is pre-selected', async () => {
    const script = join(live.dir, "permission-always.json");
    writeFileSync(script, JSON.stringify(ALWAYS_SCRIPT));
    const { runId, runner } = live.startRun(script);
    const page = await openRun(runId);
    const form = page.locator('form[data-request-id="request_permission_1"]');
    await form.waitFor(WAIT);
    assert.deepEqual(await form.locator('input[type="radio"]:checked').count(), 0, "no choice pre-selected");
    assert.equal(await form.getByRole("button", { name: "Send answer" }).isDisabled(), true);
    await form.getByLabel("Allow always").check();
    await form.getByRole("button", { name: "Send answer" }).click();
    await page
      .getByTestId("terminal")
      .getByText(/completed \/ succeeded/)
      .waitFor(WAIT);
    assert.equal(await runner.exited(), 0, runner.stderr());
    assert.deepEqual(resolutions(runId), [{ action: "accept_for_session", choice: "allow_always" }]);
    await page.close();
  });

  it('"Deny always" is sent as the project\'s mapping (a decline of deny_always): judged from the command in the store', async () => {
    const script = join(live.dir, "permission-deny-always.json");
    writeFileSync(script, JSON.stringify(ALWAYS_SCRIPT));
    const { runId, runner } = live.startRun(script);
    const page = await openRun(runId);
    const form = page.locator('form[data-request-id="request_permission_1"]');
    await form.waitFor(WAIT);
    // Must-fail twin: "deny always" sent as an allow is refused, and nothing reaches the store.
    const mismatched = await postFromPage(page, runId, {
      type: "request.resolve",
      payload: { requestId: "request_permission_1", resolution: { action: "accept", choice: "deny_always" } },
    });
    assert.deepEqual(
      [mismatched.status, mismatched.body.error?.code, mismatched.body.error?.path],
      [400, "invalid_answer", "/payload/resolution/action"],
    );
    assert.deepEqual(
      (await live.storedCommands(runId)).filter((c) => c.type === "request.resolve"),
      [],
      "the refused answer was not queued",
    );
    await form.getByLabel("Deny always").check();
    await form.getByRole("button", { name: "Send answer" }).click();
    await page
      .getByTestId("terminal")
      .getByText(/completed \/ succeeded/)
      .waitFor(WAIT);
    assert.equal(await runner.exited(), 0, runner.stderr());
    const answers = (await live.storedCommands(runId)).filter((c) => c.type === "request.resolve");
    assert.deepEqual(
      answers.map((c) => [c.payload.requestId, c.payload.resolution, c.status]),
      [["request_permission_1", { action: actionForChoice("deny_always"), choice: "deny_always" }, "completed"]],
      "one answer, stored as the mapping sends deny_always, and applied by the runner",
    );
    assert.equal(actionForChoice("deny_always"), "decline", "the project's mapping: deny always is a decline");
    assert.deepEqual(resolutions(runId), [{ action: "decline", choice: "deny_always" }]);
    await page.close();
  });

  it("an answer the runner rejected leaves the request open: a correct answer is then accepted, delivered, and the run goes on", async () => {
    const { runId, runner } = live.startRun("interactive-question");
    const page = await openRun(runId);
    const form = page.locator('form[data-request-id="request_question_1"]');
    await form.waitFor(WAIT);
    // A text answer to a question set, queued past the console (the admin command checks only its
    // shape): the runner checks it against the question set and rejects it.
    live.admin([
      "authority",
      "command",
      runId,
      "request.resolve",
      "--json",
      "--payload",
      JSON.stringify({ requestId: "request_question_1", resolution: { action: "submit", text: "online" } }),
    ]);
    await until(
      async () =>
        (await live.storedCommands(runId)).some((c) => c.type === "request.resolve" && c.status === "rejected"),
      "the runner to reject the text answer",
    );
    const answer = {
      type: "request.resolve",
      payload: {
        requestId: "request_question_1",
        resolution: {
          action: "submit",
          response: {
            schema: "paperclip.question_response.v1",
            answers: { strategy: { selectedOptionIds: ["offline"] } },
          },
        },
      },
    };
    // The page offers the form again: the request is still waiting for an answer.
    await form.getByRole("button", { name: "Send answers" }).waitFor(WAIT);
    const again = await postFromPage(page, runId, answer);
    assert.equal(again.status, 201, JSON.stringify(again.body));
    // Must-fail twin: an answer that is queued (not rejected) is the one answer; a third is refused.
    const third = await postFromPage(page, runId, answer);
    assert.deepEqual(
      [third.status, third.body.error?.code],
      [409, "request_already_answered"],
      "a second answer while the first stands",
    );
    await page
      .getByTestId("terminal")
      .getByText(/completed \/ succeeded/)
      .waitFor(WAIT);
    assert.equal(await runner.exited(), 0, runner.stderr());
    assert.deepEqual(judgeRun(live.committed(runId)), { runTerminalState: "succeeded", problems: [] });
    assert.deepEqual(
      (await live.storedCommands(runId))
        .filter((c) => c.type === "request.resolve")
        .map((c) => [c.status, c.deliveries > 0]),
      [
        ["rejected", true],
        ["completed", true],
      ],
      "the rejected answer, then the accepted one, each delivered once",
    );
    assert.deepEqual(resolutions(runId), [answer.payload.resolution], "the harness got the accepted answer only");
    await page.close();
  });

  it("a failed run says why: the terminal in words, the harness's messages, its exit code and stderr tail", async () => {
    const { runId, runner } = live.startRun("error");
    const page = await openRun(runId);
    const card = page.getByTestId("failure-card");
    await card.waitFor(WAIT);
    await runner.exited();
    await card.getByTestId("harness-exit").getByText("Exit code 7.").waitFor(WAIT);
    assert.match(
      (await card.getByTestId("failure-reason").textContent()) ?? "",
      /^The run ended failed \(turn failed\)/,
    );
    const messages = (await card.getByTestId("failure-messages").textContent()) ?? "";
    for (const said of [
      "turn.failed: registry unreachable",
      "session.failed: registry unreachable",
      "item.failed: cannot reach the package registry",
    ])
      assert.ok(messages.includes(said), `${said} in ${messages}`);
    assert.match(
      (await card.getByTestId("stderr-tail").textContent()) ?? "",
      /fatal: cannot reach the package registry/,
    );
    await page.close();
  });

  it("a stalled run says so: no progress for how long, interrupted, and the run_stalled diagnostic", async () => {
    // The interrupted scenario goes silent while it waits for an interrupt: the stall sends it one.
    const { runId, runner } = live.startRun("interrupted", ["--stall-limit-ms", "500", "--stall-grace-ms", "30000"]);
    const page = await openRun(runId);
    const card = page.getByTestId("failure-card");
    await card.waitFor(WAIT);
    await runner.exited();
    assert.match(
      (await card.getByTestId("failure-reason").textContent()) ?? "",
      /^The run ended cancelled \(turn interrupted\): stalled — no progress reported for 500 ms during turn \S+; the turn was interrupted$/,
    );
    assert.match((await card.getByTestId("failure-diagnostics").textContent()) ?? "", /run_stalled/);
    // The store's record, read apart from the page: the stall, the harness's honoured interrupt, one terminal.
    const events = live.committed(runId);
    assert.deepEqual(
      events.flatMap((e) =>
        e.eventType === "runner.diagnostic"
          ? [String(e.payload.code)]
          : /^(turn\.interrupted|run\.terminal)$/.test(e.eventType)
            ? [e.eventType]
            : [],
      ),
      ["run_stalled", "turn.interrupted", "run.terminal"],
    );
    assert.equal((events.at(-1)!.payload.stopReason as { code?: string } | undefined)?.code, "stalled");
    await page.close();
  });

  it("a named agent that is not installed: the page says why in prp run's words", async () => {
    const agentsDir = mkdtempSync(join(tmpdir(), "prp-console-agents-"));
    try {
      const { runId, runner } = live.startNamedRun("claude", agentsDir);
      const page = await openRun(runId);
      const card = page.getByTestId("failure-card");
      await card.waitFor(WAIT);
      await runner.exited();
      assert.equal(
        (await card.getByTestId("failure-reason").textContent()) ?? "",
        `The run ended failed (turn failed): cannot start the agent: agent_not_installed — claude (@zed-industries/claude-code-acp@0.16.2) is not installed in ${agentsDir}: run \`prp agents install claude\``,
      );
      await page.close();
    } finally {
      rmSync(agentsDir, { recursive: true, force: true });
    }
  });

  it("a live run's duration runs on; Cancel asks to be confirmed, then ends the run; an ended run offers no Interrupt or Cancel", async () => {
    const { runId, runner } = live.startRun("interrupted");
    const page = await openRun(runId);
    await page.getByTestId("conversation").getByText("compiling…").waitFor(WAIT);
    // The harness is silent now (it waits for an interrupt), yet the shown duration moves on.
    const first = await page.getByTestId("elapsed").textContent();
    await until(
      async () => (await page.getByTestId("elapsed").textContent()) !== first,
      `the duration to move on from ${first} while the run is live`,
    );

    const commandsBefore = live.commandCount(runId);
    await page.getByRole("button", { name: "Cancel the run" }).click();
    const confirm = page.getByRole("button", { name: "Confirm cancel" });
    await confirm.waitFor(WAIT);
    assert.equal(live.commandCount(runId), commandsBefore, "the first click queues nothing");
    await page.getByRole("button", { name: "Keep the run going" }).click();
    assert.equal(await confirm.count(), 0, "taking it back hides the confirmation");
    await page.getByRole("button", { name: "Cancel the run" }).click();
    await confirm.click();
    await page.getByTestId("command-state").getByText("applied by the runner").waitFor(WAIT);
    await page.getByTestId("run-state").getByText("cancelled").waitFor(WAIT);
    await runner.exited();
    await page.getByTestId("ended-note").waitFor(WAIT);
    for (const name of ["Interrupt the turn", "Cancel the run", "Confirm cancel"])
      assert.equal(await page.getByRole("button", { name }).count(), 0, `no "${name}" once run.terminal is in`);
    const ended = await page.getByTestId("duration").textContent();
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(await page.getByTestId("duration").textContent(), ended, "an ended run's duration stands still");
    await page.close();
  });
});
