import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { driveAgent, type Driven } from "./drive-agent.js";

const FOLLOW_UP = "Now the second part, please.";
const answers = (r: Driven) =>
  r
    .of("item.completed")
    .map((e) => e.payload as Record<string, any>)
    .filter((p) => p.kind === "assistant_message");
const receiptOf = (r: Driven, type: string) => r.receipts.filter((x) => x.type === type);

describe("turn.steer: a queued follow-up within the ACP turn", () => {
  it("sends the follow-up as a second prompt in the same session before the turn completes", async () => {
    let steered = false;
    let late = false;
    const r = await driveAgent("follow-up", {
      react: (record, send) => {
        if ("eventType" in record && record.eventType === "item.delta" && !steered) {
          steered = true;
          send("turn.steer", { text: FOLLOW_UP });
        }
        if ("eventType" in record && record.eventType === "turn.completed" && !late) {
          late = true;
          send("turn.steer", { text: "too late" });
        }
      },
    });
    const [queued, refused] = receiptOf(r, "turn.steer");
    assert.equal(queued?.status, "accepted", JSON.stringify(queued));
    assert.deepEqual([refused?.status, refused?.code], ["rejected", "no_active_turn"], JSON.stringify(refused));
    assert.deepEqual(
      answers(r).map((p) => [p.text, p.channel ?? null]),
      [
        ["you said: Fix the failing test.", null],
        [`you said: ${FOLLOW_UP}`, "final"],
      ],
      "each prompt's answer, the follow-up's last and final",
    );
    const at = (type: string) => r.types.indexOf(type);
    assert.ok(r.types.lastIndexOf("item.completed") < at("turn.completed"), "both answers before turn.completed");
    for (const type of ["turn.started", "turn.completed", "run.terminal"])
      assert.equal(r.of(type).length, 1, `exactly one ${type}`);
    assert.equal(r.terminal.runTerminalState, "succeeded");
  });

  it("drops a queued follow-up when the prompt ends with an error: the turn fails once", async () => {
    let steered = false;
    const r = await driveAgent("follow-up-error", {
      react: (record, send) => {
        if ("eventType" in record && record.eventType === "item.delta" && !steered) {
          steered = true;
          send("turn.steer", { text: FOLLOW_UP });
        }
      },
    });
    assert.equal(receiptOf(r, "turn.steer")[0]?.status, "accepted");
    assert.equal(r.of("turn.failed").length, 1, "the turn fails once");
    assert.equal(r.of("turn.completed").length, 0);
    assert.equal(r.of("run.terminal").length, 1);
    assert.ok(
      r.of("harness.diagnostic").some((e) => (e.payload as Record<string, any>).code === "acp_follow_up_dropped"),
      "a diagnostic says the follow-up was dropped",
    );
    assert.ok(!answers(r).some((p) => String(p.text).includes(FOLLOW_UP)), "the follow-up never reached the agent");
    assert.equal(r.terminal.runTerminalState, "failed");
  });
});
