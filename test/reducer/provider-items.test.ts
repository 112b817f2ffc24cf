import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { PrpEvent } from "../../src/contract/index.js";
import { replayEventStream } from "../../src/reducer/index.js";
import { envelope, type Body } from "./arbitraries.js";

/** A durable run's item events: every one carries the run's single envelope itemId, and the harness's own item in providerItemId. */
const item = (
  eventType: string,
  providerItemId: string | undefined,
  payload: Record<string, unknown>,
): Body & { providerItemId?: string } => ({
  eventType,
  itemId: "item_run_1",
  payload,
  ...(providerItemId ? { providerItemId } : {}),
});

const transcript = (bodies: Array<Body & { providerItemId?: string }>): Uint8Array =>
  Buffer.from(
    bodies
      .map((b, i) =>
        JSON.stringify({
          ...envelope("runner_t", i + 1, `event_${i + 1}`, b),
          ...(b.providerItemId ? { providerItemId: b.providerItemId } : {}),
        } as PrpEvent),
      )
      .join("\n"),
  );

describe("session reducer: items of a durable run", () => {
  it("keeps two harness items apart when they share the envelope itemId (replayed from NDJSON)", () => {
    const replayed = replayEventStream(
      transcript([
        item("item.started", "item_command_1", { kind: "command", text: "" }),
        item("item.delta", "item_command_1", { text: "npm test: 12 passing" }),
        item("item.completed", "item_command_1", { kind: "command", text: "npm test: 12 passing" }),
        item("item.started", "item_file_1", { kind: "file_change", text: "" }),
        item("item.completed", "item_file_1", { kind: "file_change", text: "src/greeting.ts: 3 lines changed" }),
      ]),
    );
    assert.ok(replayed.ok, JSON.stringify(!replayed.ok && replayed.error));
    assert.deepEqual(replayed.snapshot.items, [
      { itemId: "item_command_1", kind: "command", status: "completed", text: "npm test: 12 passing" },
      { itemId: "item_file_1", kind: "file_change", status: "completed", text: "src/greeting.ts: 3 lines changed" },
    ]);
  });

  it("without providerItemId, items are keyed by the envelope's itemId as before", () => {
    const replayed = replayEventStream(
      transcript([
        item("item.started", undefined, { kind: "command", text: "" }),
        item("item.completed", undefined, { kind: "file_change", text: "x" }),
      ]),
    );
    assert.ok(replayed.ok);
    assert.deepEqual(replayed.snapshot.items, [
      { itemId: "item_run_1", kind: "file_change", status: "completed", text: "x" },
    ]);
  });
});
