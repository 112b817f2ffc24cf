import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { updateProblem } from "../../../src/harness/acp/update-check.js";
import { until } from "../../support/until.js";

const S = "s1";
/** Updates the SDK delivers and the check must accept. */
const VALID: Record<string, unknown>[] = [
  { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } },
  { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hm" } },
  { sessionUpdate: "tool_call", toolCallId: "c1", title: "Edit", kind: "edit", status: "pending" },
  {
    sessionUpdate: "tool_call_update",
    toolCallId: "c1",
    status: "completed",
    content: [{ type: "diff", path: "/w/a", newText: "x" }],
  },
  { sessionUpdate: "plan", entries: [{ content: "a", priority: "high", status: "pending" }] },
  { sessionUpdate: "current_mode_update", currentModeId: "code" },
  { sessionUpdate: "available_commands_update", availableCommands: [] },
  { sessionUpdate: "session_info_update", title: "t" },
  { sessionUpdate: "usage_update", used: 1, size: 10 },
  { sessionUpdate: "notice", severity: "info", title: "n" },
  // The SDK does not check a tool call's content: the projection skips what it cannot read.
  {
    sessionUpdate: "tool_call_update",
    toolCallId: "c1",
    content: [{ type: "diff", newText: "x" }, { type: "content" }],
  },
  { sessionUpdate: "tool_call_update", toolCallId: "c2", content: "not a list" },
];
/** Updates the SDK drops and the check must refuse. */
const DROPPED: Record<string, unknown>[] = [
  { sessionUpdate: "telepathy" },
  { sessionUpdate: "tool_call", title: "no id" },
  { sessionUpdate: "tool_call_update", status: "completed" },
  { sessionUpdate: "agent_message_chunk" },
  { sessionUpdate: "agent_message_chunk", content: { type: "text" } },
  { sessionUpdate: "plan" },
  { sessionUpdate: "current_mode_update" },
  { sessionUpdate: "usage_update", used: "1", size: 10 },
  { sessionUpdate: "notice", title: "no severity" },
];

/** Feeds raw session/update lines to a real SDK client and returns the indexes it delivered. */
async function deliveredBySdk(updates: Record<string, unknown>[]): Promise<number[]> {
  const delivered: number[] = [];
  let feed!: ReadableStreamDefaultController<Uint8Array>;
  const input = new ReadableStream<Uint8Array>({ start: (c) => void (feed = c) });
  const output = new WritableStream<Uint8Array>({ write: () => {} });
  const app = acp.client({ name: "oracle" }).onNotification(acp.methods.client.session.update, ({ params }) => {
    delivered.push(
      Number((params.update as { _meta?: { i: number } })._meta?.i ?? (params as { _meta?: { i: number } })._meta?.i),
    );
  });
  const errors = console.error;
  console.error = () => {}; // the SDK logs each drop; the test only counts deliveries
  const connection = app.connect(acp.ndJsonStream(output, input));
  try {
    updates.forEach((u, i) =>
      feed.enqueue(
        new TextEncoder().encode(
          `${JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: S, update: u, _meta: { i } } })}\n`,
        ),
      ),
    );
    // A final valid marker: once it arrives, every earlier line has been dispatched.
    feed.enqueue(
      new TextEncoder().encode(
        `${JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: S, update: VALID[0], _meta: { i: -1 } } })}\n`,
      ),
    );
    await until(() => delivered.includes(-1), "the SDK delivers the final marker update");
  } finally {
    console.error = errors;
    connection.close();
  }
  return delivered.filter((i) => i >= 0).sort((a, b) => a - b);
}

describe("the update check mirrors what the ACP SDK drops", () => {
  it("the SDK delivers every update the check accepts", async () => {
    assert.deepEqual(
      await deliveredBySdk(VALID),
      VALID.map((_, i) => i),
    );
    for (const u of VALID) assert.equal(updateProblem({ sessionId: S, update: u }), null, JSON.stringify(u));
  });

  it("the SDK drops every update the check refuses, silently (no handler sees it)", async () => {
    assert.deepEqual(await deliveredBySdk(DROPPED), []);
    for (const u of DROPPED) assert.notEqual(updateProblem({ sessionId: S, update: u }), null, JSON.stringify(u));
  });
});
