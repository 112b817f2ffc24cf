import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { until } from "../support/until.js";
import { liveConsole, WAIT, type LiveConsole } from "./live-console.js";

/** What a hostile agent may say: markup, an escape sequence, a deceptive link. */
const HOSTILE =
  '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>\u001b[31mred\u001b[0m [ok](javascript:alert(1))';

const hostileScript = {
  schema: "paperclip.fake_harness.script.v1",
  name: "hostile-message",
  description: "Says something hostile as its message, then ends.",
  steps: [
    {
      kind: "event",
      event_type: "item.started",
      item_id: "item_message_1",
      payload: { kind: "assistant_message", text: "" },
    },
    {
      kind: "event",
      event_type: "item.completed",
      item_id: "item_message_1",
      payload: { kind: "assistant_message", text: HOSTILE },
    },
    {
      kind: "result",
      payload: {
        schema: "paperclip.run_result.v1",
        reportedWorkDisposition: "done",
        summary: HOSTILE,
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

/** A path an agent may name: a `../` inside a segment, an escape sequence, a bell, markup. */
const HOSTILE_PATH = "src/a../\u001b[31mevil\u0007<img src=x>.ts";
const DIFF_BYTES = 5 * 1024 * 1024;
const CHUNK = 32_000;
const DIFF_HEAD =
  "--- a/src/greeting.ts\n+++ b/src/greeting.ts\n@@ -1 +1 @@\n-hello world\n+hello, world\n <b>ctx</b>\n";

/** A tool call that changes two files and carries its 5 MB diff as body chunks, then ends. */
function diffScript() {
  const body = {
    schema: "paperclip.output.body.v1",
    bodyId: "a".repeat(64),
    sha256: "a".repeat(64),
    byteLength: String(DIFF_BYTES),
    mediaType: "text/plain; charset=utf-8",
  };
  const tool = (status: string) => ({
    schema: "paperclip.tool.execution.v1",
    executionId: "tool_edit_1",
    transport: "builtin",
    operation: "edit",
    status,
    output: null,
    outputBytes: 0,
    outputTruncated: false,
    outputDigest: null,
    name: "Edit files",
  });
  const text = DIFF_HEAD + "+".repeat(DIFF_BYTES - DIFF_HEAD.length);
  const chunks = [];
  for (let offset = 0; offset < DIFF_BYTES; offset += CHUNK)
    chunks.push({
      kind: "event",
      event_type: "output.body.chunk",
      payload: {
        schema: "paperclip.output.body.chunk.v1",
        body,
        offset: String(offset),
        sha256: "b".repeat(64),
        text: text.slice(offset, offset + CHUNK),
      },
    });
  const done = hostileScript.steps.slice(-4);
  return {
    ...hostileScript,
    name: "hostile-diff",
    description: "Edits two files, one with a hostile name, with a 5 MB diff, then ends.",
    steps: [
      { kind: "event", event_type: "tool.execution.started", item_id: "tool_edit_1", payload: tool("running") },
      { kind: "event", event_type: "tool.execution.completed", item_id: "tool_edit_1", payload: tool("completed") },
      {
        kind: "event",
        event_type: "workspace.change.updated",
        item_id: "tool_edit_1",
        payload: {
          schema: "paperclip.workspace.diff.v1",
          diffId: "diff_1",
          complete: true,
          files: [
            { path: "src/greeting.ts", changeKind: "modified", previousPath: null, additions: 1, deletions: 1 },
            { path: HOSTILE_PATH, changeKind: "added", previousPath: null, additions: 9, deletions: 0 },
          ],
          body,
        },
      },
      ...chunks,
      ...done,
    ],
  };
}

describe("prp console in Chromium: a run's conversation", () => {
  let live: LiveConsole;
  before(async () => {
    live = await liveConsole("prp-console-conversation-");
  });
  after(() => live?.close());

  it("shows the prompt, the plan as a checklist, thinking, a tool call and the agent's answer, in order, then the result", async () => {
    const { runId, runner } = live.startAgentRun("streamed-answer");
    const page = await live.openRun(runId);
    const conversation = page.getByTestId("conversation");
    await conversation.getByTestId("user-message").getByText("Play the scenario.").waitFor(WAIT);
    await conversation
      .getByTestId("assistant-message")
      .getByText("I fixed the greeting: the test passes now.")
      .waitFor(WAIT);
    await page
      .getByTestId("terminal")
      .getByText(/completed \/ succeeded/)
      .waitFor(WAIT);
    assert.equal(await runner.exited(), 0, runner.stderr());

    const tool = conversation.getByTestId("tool-call");
    assert.equal(await tool.getAttribute("data-status"), "completed");
    assert.equal(await tool.getByTestId("tool-target").textContent(), "src/greeting.ts");
    assert.match((await tool.textContent()) ?? "", /Edit src\/greeting\.ts/);
    // The ACP diff names the file and its line counts; it carries no text.
    const changes = tool.getByTestId("file-changes");
    assert.equal(await changes.locator(".file-changes-summary").textContent(), "1 file changed, +1 −1");
    assert.deepEqual(await changes.locator("li").evaluateAll((els) => els.map((e) => e.getAttribute("data-change"))), [
      "modified",
    ]);
    assert.match((await changes.locator("li").textContent()) ?? "", /modified src\/greeting\.ts/);
    assert.equal(await tool.getByTestId("diff").count(), 0, "no diff text to show");
    const thinking = conversation.getByTestId("thinking");
    assert.equal(await thinking.evaluate((d) => d.hasAttribute("open")), false, "thinking starts folded");
    await thinking.locator("summary").click();
    await thinking.getByText("The test expects a comma.").waitFor(WAIT);

    const entries = page.getByTestId("plan").getByTestId("plan-entry");
    assert.deepEqual(
      await entries.evaluateAll((rows) =>
        rows.map((r) => [r.textContent?.split(" (")[0]?.slice(2), r.getAttribute("data-status")]),
      ),
      [
        ["Read the failing test", "completed"],
        ["Fix the greeting", "completed"],
      ],
      "the plan's latest revision, each step's status",
    );
    // In order: the prompt, the thinking, the tool call, the answer.
    const order = await conversation
      .locator(
        "[data-testid=user-message], [data-testid=thinking], [data-testid=tool-call], [data-testid=assistant-message]",
      )
      .evaluateAll((els) => els.map((e) => e.getAttribute("data-testid")));
    assert.deepEqual(order, ["user-message", "thinking", "tool-call", "assistant-message"]);
    // No raw JSON on the main page, and nothing to send to an ended run.
    assert.equal(await page.locator("pre.json").count(), 0);
    assert.equal(await page.getByTestId("follow-up").count(), 0, "no follow-up box on an ended run");
    assert.equal(await page.getByTestId("interrupt").count(), 0);
    await page.close();
  });

  it("a follow-up starts the turn of a run created without a prompt: sent as turn.start with the person's words, applied, and shown", async () => {
    const { runId, runner } = live.startAgentRun("streamed-answer", null);
    const page = await live.openRun(runId);
    const box = page.getByTestId("follow-up");
    await box.waitFor(WAIT);
    await page.getByText("Sent as turn.start").waitFor(WAIT);
    await box.fill("Fix the greeting, please.");
    await page.getByTestId("send-follow-up").click();
    await page
      .getByTestId("receipt")
      .getByText(/Queued turn\.start/)
      .waitFor(WAIT);
    await page
      .getByTestId("conversation")
      .getByTestId("user-message")
      .getByText("Fix the greeting, please.")
      .waitFor(WAIT);
    await page.getByTestId("assistant-message").getByText("I fixed the greeting: the test passes now.").waitFor(WAIT);
    await page
      .getByTestId("terminal")
      .getByText(/completed \/ succeeded/)
      .waitFor(WAIT);
    assert.equal(await runner.exited(), 0, runner.stderr());
    const starts = (await live.storedCommands(runId)).filter((c) => c.type === "turn.start");
    assert.deepEqual(
      starts.map((c) => [c.payload.text, c.status]),
      [["Fix the greeting, please.", "completed"]],
      "one turn.start, with the person's words, applied by the runner",
    );
    await page.close();
  });

  it("a follow-up into a running turn is sent as turn.steer and queued by the runner; Interrupt says what it does; Cancel confirms", async () => {
    const { runId, runner } = live.startAgentRun("working");
    const page = await live.openRun(runId);
    await page.getByTestId("assistant-message").getByText("Working on it.").waitFor(WAIT);
    assert.match((await page.locator("#interrupt-note").textContent()) ?? "", /stop the turn it is working on/);
    await page.getByText("Sent as turn.steer").waitFor(WAIT);
    await page.getByTestId("follow-up").fill("Also update the docs.");
    await page.getByTestId("send-follow-up").click();
    await until(
      async () =>
        (await live.storedCommands(runId)).some(
          (c) => c.type === "turn.steer" && c.payload.text === "Also update the docs.",
        ),
      "the steer to be in the store",
    );
    await page.getByTestId("user-message").getByText("Also update the docs.").waitFor(WAIT);
    // The ACP driver queues it for when the prompt in flight ends: the runner's result, in words, where it was sent.
    const state = page.getByTestId("command-state");
    await state.getByText("applied by the runner").waitFor(WAIT);
    const steer = (await live.storedCommands(runId)).find((c) => c.type === "turn.steer")!;
    assert.equal(steer.status, "completed");
    await page.getByTestId("cancel-run").click();
    await page.getByTestId("confirm-cancel").click();
    await page.getByTestId("run-state").getByText("cancelled").waitFor(WAIT);
    await runner.exited();
    await page.getByTestId("ended-note").waitFor(WAIT);
    assert.equal(await page.getByTestId("follow-up").count(), 0, "the box is gone once the run ended");
    await page.close();
  });

  it("an agent's message with markup and escape sequences is shown as text, never run", async () => {
    const script = join(live.dir, "hostile-message.json");
    writeFileSync(script, JSON.stringify(hostileScript));
    const { runId, runner } = live.startRun(script);
    const page = await live.openRun(runId);
    const message = page.getByTestId("assistant-message");
    await message.waitFor(WAIT);
    await page.getByTestId("terminal").waitFor(WAIT);
    await runner.exited();
    assert.match(
      (await page.getByTestId("terminal").textContent()) ?? "",
      /completed \/ succeeded/,
      `${await page.getByTestId("conversation").textContent()}\n${runner.stderr()}`,
    );
    assert.equal(
      await message.locator("pre").textContent(),
      HOSTILE.replaceAll("\u001b", "\u241b"),
      "the words exactly, as text, the escape character made visible (␛)",
    );
    assert.equal(
      await page.getByTestId("conversation").locator("img, script, a").count(),
      0,
      "no element from the text",
    );
    assert.equal(await page.evaluate("window.__pwned"), undefined);
    await page.close();
  });

  it("a tool call's file changes and its diff: summed, each file's kind, +/− lines marked; a hostile path and a 5 MB diff shown bounded, as text", async () => {
    const script = join(live.dir, "hostile-diff.json");
    writeFileSync(script, JSON.stringify(diffScript()));
    const { runId, runner } = live.startRun(script);
    const page = await live.openRun(runId);
    await page.getByTestId("terminal").waitFor(WAIT);
    assert.equal(await runner.exited(), 0, runner.stderr());
    const changes = page.getByTestId("tool-call").getByTestId("file-changes");
    assert.equal(await changes.locator(".file-changes-summary").textContent(), "2 files changed, +10 −1");
    const files = await changes
      .locator("li")
      .evaluateAll((els) => els.map((e) => [e.getAttribute("data-change"), e.querySelector("code")?.textContent]));
    assert.deepEqual(files, [
      ["modified", "src/greeting.ts"],
      ["added", HOSTILE_PATH],
    ]);
    const diff = changes.getByTestId("diff");
    assert.equal(await diff.evaluate((d) => d.hasAttribute("open")), false, "the diff starts folded");
    await diff.locator("summary").click();
    const lines = diff.locator(".diff-line");
    assert.deepEqual(await lines.evaluateAll((els) => els.slice(3, 6).map((e) => [e.className, e.textContent])), [
      ["diff-line diff-del", "-hello world\n"],
      ["diff-line diff-add", "+hello, world\n"],
      ["diff-line diff-ctx", " <b>ctx</b>\n"],
    ]);
    const shown = (await diff.locator("pre").textContent()) ?? "";
    assert.ok(shown.length <= 65_536 + 10, `the diff shown is bounded: ${shown.length} characters`);
    assert.match((await diff.textContent()) ?? "", /The rest of the diff is not shown/);
    assert.equal(
      await page.getByTestId("conversation").locator("img, b, script").count(),
      0,
      "no element from the text",
    );
    await page.close();
  });
});
