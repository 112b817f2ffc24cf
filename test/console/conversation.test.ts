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
});
