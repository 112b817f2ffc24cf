import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { judgeRun } from "../cli/authority-run.js";
import { runPrp } from "../cli/run-cli.js";
import { until } from "../support/until.js";
import { agentCommand, byTestId, runRow, shown, startFromForm, storedState, WAIT_MS } from "./product-page.js";
import { productStack, type ProductStack, type StoreKind } from "./product-stack.js";

/** Markup and terminal escapes a prompt or an agent may send: shown as text, never obeyed. */
const HOSTILE = "<img src=x onerror=alert(1)>";
const ANSI_RED = "\u001b[31mred alert\u001b[0m";

/**
 * The console as a product, end to end: a person starts, follows, answers and ends runs from
 * the page alone, against a real authority, worker and store of `kind`. The page is the only
 * actor; what it claims is checked against the store (`prp authority runs --json`, `prp events
 * --json`, the store's commands), a record the page does not write about itself.
 */
export function productScenario(kind: StoreKind): void {
  describe(`the console as a product on ${kind}: runs started, answered, followed and ended from the page`, () => {
    let stack: ProductStack;
    const pages: Page[] = [];
    before(async () => {
      stack = await productStack(kind);
    });
    after(async () => {
      for (const page of pages) await page.close().catch(() => undefined);
      await stack?.close();
    });

    const open = async (hash = "#/") => {
      const page = await stack.open(hash);
      pages.push(page);
      return page;
    };
    const said = (runId: string) => () => storedState(stack, runId);
    /** Waits for the store to hold the run's terminal. */
    const ended = (runId: string) =>
      until(
        () => stack.run(runId).terminal,
        () => `run ${runId}'s terminal in the store: ${said(runId)()}`,
        WAIT_MS,
      );
    const terminalState = (runId: string) => judgeRun(stack.events(runId)).runTerminalState;

    it("the stack: the page signs in with the console's token and the worker polls", async () => {
      const page = await open("#/");
      await shown(page.getByText(/No runs yet|Runs \(/).or(byTestId(page, "runs-table")), "the run list (#/)");
      assert.equal(await byTestId(page, "runs-refused").count(), 0, "the console took the page's token");
      await until(
        () => {
          const list = runPrp(["authority", "worker", "list", "--json", ...stack.store.flags]);
          return list.stdout.split("\n").some((l) => l !== "" && JSON.parse(l).lastSeenAt !== null);
        },
        () => `the worker's first poll; ${stack.logs()}`,
        WAIT_MS,
      );
    });

    it("a. a run started from the new-run form lands on its page, is claimed by the worker and watched live", async () => {
      const page = await open();
      const prompt = "Fix the greeting, please.";
      const runId = await startFromForm(stack, page, {
        agent: { kind: "command", command: agentCommand("conversation.json") },
        prompt,
      });
      const endedAtLanding = await stack.ended(runId);
      const conversation = byTestId(page, "conversation");
      await shown(
        byTestId(conversation, "user-message").filter({ hasText: prompt }),
        "the prompt as a user-message",
        said(runId),
      );
      await shown(
        byTestId(conversation, "assistant-message").filter({ hasText: "Hello from the agent: the greeting is fixed." }),
        "the agent's answer as an assistant-message",
        () => `${said(runId)()}\n${stack.logs()}`,
      );
      assert.equal(endedAtLanding, false, "the page was on the run before it ended: the answer came to it live");
      await ended(runId);
      const run = stack.run(runId);
      assert.equal(run.dispatch?.attempts, 1, "claimed once");
      assert.equal(stack.startedFor(runId).length, 1, "the worker's own record started one runner for it");
      const turns = (await stack.commands(runId)).filter((c) => c.type === "turn.start");
      assert.deepEqual(
        turns.map((c) => c.payload.text),
        [prompt],
        "the store's turn.start holds the prompt",
      );
      assert.match(JSON.stringify(stack.events(runId)), /Hello from the agent/, "the store holds what the page showed");
    });

    it("hostile: markup and terminal escapes in a prompt and an agent's message show as text", async () => {
      const page = await open();
      const prompt = `Please ${HOSTILE} and ${ANSI_RED}`;
      const runId = await startFromForm(stack, page, {
        agent: { kind: "command", command: agentCommand("hostile.json") },
        prompt,
      });
      const conversation = byTestId(page, "conversation");
      const asked = byTestId(conversation, "user-message").filter({ hasText: HOSTILE });
      const answered = byTestId(conversation, "assistant-message").filter({ hasText: HOSTILE });
      await shown(asked, `the prompt with ${HOSTILE} as text`, said(runId));
      await shown(answered, `the agent's message with ${HOSTILE} as text`, said(runId));
      await shown(answered.filter({ hasText: "red alert" }), "the escaped words of the agent's message", said(runId));
      await ended(runId);
      for (const [what, message] of [
        ["prompt", asked],
        ["agent's message", answered],
      ] as const) {
        assert.equal(
          await message.locator("img, script, [style], [onerror]").count(),
          0,
          `no element made of the ${what}`,
        );
        assert.doesNotMatch((await message.first().innerHTML()) ?? "", /<img|<script/i, `the ${what} is text`);
      }
      assert.equal(await page.locator("img[src=x]").count(), 0, "no image anywhere on the page");
      assert.deepEqual(stack.incidents(page), { dialogs: [], errors: [] }, "no dialog, no script error");
    });

    it("b. a question set answered from the page: the store holds exactly one request.resolve and the run proceeds", async () => {
      const page = await open();
      const runId = await startFromForm(stack, page, {
        agent: { kind: "fake", script: "interactive-question" },
        prompt: "Migrate the database.",
      });
      const form = page.locator('form[data-request-id="request_question_1"]');
      await shown(form, "the question-set form of request_question_1", said(runId));
      const list = await open("#/");
      const row = await runRow(stack, list, runId);
      await shown(byTestId(row, "waiting-badge"), "the waiting-badge on a run that waits for a person", said(runId));
      await form.getByLabel(/Offline with downtime/).check();
      await form
        .locator('fieldset[data-question-id="notes"]')
        .getByLabel("Your answer")
        .fill("Tell the on-call first.");
      await form.getByRole("button", { name: "Send answers" }).click();
      await ended(runId);
      const resolves = (await stack.commands(runId)).filter((c) => c.type === "request.resolve");
      assert.deepEqual(
        resolves.map((c) => [c.payload.requestId, c.payload.resolution, c.status]),
        [
          [
            "request_question_1",
            {
              action: "submit",
              response: {
                schema: "paperclip.question_response.v1",
                answers: { strategy: { selectedOptionIds: ["offline"] }, notes: { text: "Tell the on-call first." } },
              },
            },
            "completed",
          ],
        ],
        "one answer, as the person chose it, applied by the runner",
      );
      assert.equal(terminalState(runId), "succeeded", "the run went on to its end");
      await shown(byTestId(page, "result-card"), "the result-card of the finished run", said(runId));
      await until(async () => (await byTestId(row, "waiting-badge").count()) === 0, "the waiting-badge to go", WAIT_MS);
    });

    it('c. a permission answered "allow always": the store\'s resolve says accept_for_session', async () => {
      const page = await open();
      const runId = await startFromForm(stack, page, {
        agent: { kind: "command", command: agentCommand("permission") },
        prompt: "Install the dependencies.",
      });
      const form = page.locator("form[data-request-id]");
      await shown(form, "the agent's permission request as a form", () => {
        const resolved = stack.events(runId).find((e) => e.eventType === "runtime_request.resolved");
        const byPolicy = resolved
          ? ` — the runner answered it itself: ${JSON.stringify(resolved.payload).slice(0, 300)} (a worker's runner gets no --permission-policy ask, so an ACP agent's requests never reach a person)`
          : "";
        return `${said(runId)()}${byPolicy}`;
      });
      await form.getByLabel(/Always allow/).check();
      await form.getByRole("button", { name: /Send answer/ }).click();
      await shown(
        byTestId(page, "assistant-message").filter({ hasText: "permission outcome: always" }),
        "the agent's word that it was allowed always",
        said(runId),
      );
      await ended(runId);
      const resolves = (await stack.commands(runId)).filter((c) => c.type === "request.resolve");
      assert.equal(resolves.length, 1, "one answer");
      assert.deepEqual(resolves[0]!.payload.resolution, { action: "accept_for_session", choice: "allow_always" });
    });

    it("d. a follow-up sent from the page is stored with its text and the next turn's answer is shown", async () => {
      const page = await open();
      const runId = await startFromForm(stack, page, {
        agent: { kind: "command", command: agentCommand("follow-up.json") },
        prompt: "Answer the first part.",
      });
      const answers = byTestId(page, "assistant-message").filter({ hasText: "Answered this prompt." });
      await shown(answers, "the first turn's answer", said(runId));
      const followUp = "Now the second part, please.";
      const box = byTestId(page, "follow-up");
      await shown(box, "the follow-up box", said(runId));
      await until(
        async () => await box.isEnabled(),
        () => `the follow-up box to take text: ${said(runId)()}`,
        WAIT_MS,
      );
      await box.fill(followUp);
      await byTestId(page, "send-follow-up").click();
      let sent: Awaited<ReturnType<ProductStack["commands"]>> = [];
      await until(
        async () => {
          sent = (await stack.commands(runId)).filter(
            (c) => (c.type === "turn.start" || c.type === "turn.steer") && c.payload.text === followUp,
          );
          return sent.length > 0;
        },
        () => `a turn.start or turn.steer with the follow-up's text in the store: ${said(runId)()}`,
        WAIT_MS,
      );
      assert.equal(sent.length, 1, "the follow-up was queued once");
      await shown(
        byTestId(page, "user-message").filter({ hasText: followUp }),
        "the follow-up as a user-message",
        said(runId),
      );
      let stored: unknown;
      await until(
        async () => {
          stored = (await stack.commands(runId)).find((c) => c.payload.text === followUp);
          return (await answers.count()) >= 2;
        },
        () =>
          `the next turn's answer (a second assistant-message); the store's follow-up command: ${JSON.stringify(stored)}; ${said(runId)()}`,
        WAIT_MS,
      );
    });

    it("e. a run no worker can claim shows queued with why, is cancelled from the list, and never got a ticket", async () => {
      const page = await open();
      const runId = await startFromForm(stack, page, {
        agent: { kind: "fake", script: "happy-path" },
        prompt: "Wait for a pool nobody has.",
        labels: "pool=none",
      });
      await page.goto(`${stack.base}/#/workers`);
      const queued = byTestId(page, "queue-table").locator(`tr[data-run-id="${runId}"]`);
      await shown(
        byTestId(queued, "wait-reason").filter({ hasText: "pool=none" }),
        "the queued run's wait reason (#/workers, queue-table)",
        said(runId),
      );
      await page.goto(`${stack.base}/#/`);
      const row = await runRow(stack, page, runId);
      await shown(row.locator(".state-queued"), "the run as queued in the run list", said(runId));
      assert.match(stack.run(runId).waiting ?? "", /pool=none/, "the store says why it waits, as the page did");
      await byTestId(row, "cancel-queued").click();
      await byTestId(page, "confirm-cancel").click();
      await shown(row.locator(".state").filter({ hasText: "cancelled" }), "the run as cancelled", said(runId));
      const run = stack.run(runId);
      assert.equal(run.dispatch?.endReason, "cancelled");
      assert.deepEqual(
        [run.dispatch?.attempts, run.dispatch?.workerId, run.connectionCount],
        [0, null, 0],
        "never claimed, so never issued a ticket, and no runner ever connected",
      );
      assert.deepEqual(stack.startedFor(runId), [], "the worker started nothing for it");
      assert.deepEqual(stack.events(runId), [], "no event: nothing ran");
    });

    it("f. a failed run's reason reads on the page in words: the agent's exit status and its stderr", async () => {
      const page = await open();
      const runId = await startFromForm(stack, page, {
        agent: { kind: "command", command: agentCommand("crash") },
        prompt: "Crash, please.",
      });
      const card = byTestId(page, "failure-card");
      await shown(card, "the failure-card", said(runId));
      await ended(runId);
      assert.equal(terminalState(runId), "failed", "the store says the run failed");
      await shown(
        card.filter({ hasText: "out of cheese" }),
        "the agent's stderr tail in the failure-card",
        said(runId),
      );
      assert.match((await card.textContent()) ?? "", /\b(exit|exited)\b[^.]*\b3\b/i, "its exit status, in words");
    });

    it("g. the page's run list shows every run with the state the store has for it", async () => {
      const page = await open("#/");
      const all = stack.runs();
      assert.ok(all.length > 0, "the steps above made runs");
      for (const stored of all) {
        const row = await runRow(stack, page, stored.runId);
        if (stored.state !== "ended") continue;
        const expected =
          stored.dispatch?.endReason ??
          judgeRun(stack.events(stored.runId)).runTerminalState ??
          assert.fail(`run ${stored.runId} ended with no reason in the store`);
        await shown(
          row.locator(".state").filter({ hasText: expected }),
          `run ${stored.runId} as ${expected} in the run list`,
          async () => `the row reads "${(await row.textContent())?.trim()}"`,
        );
      }
    });
  });
}
