import { cutText } from "../../../contract/text-cut.js";
import type { ProjectionState } from "./state.js";
import type { Obj } from "./wire.js";

type ItemKind = "assistant_message" | "reasoning_summary";

interface OpenItem {
  itemId: string;
  kind: ItemKind;
  text: string;
}

const MAX_TEXT = 64 * 1024;

/**
 * The agent's message and thought chunks as items: each chunk a delta of the turn's one open
 * message or thought, both completed when the turn ends.
 */
export class MessageItems {
  private seq = 0;
  private message: OpenItem | null = null;
  private thought: OpenItem | null = null;
  private answer = "";

  /** How many items the run has opened. */
  get count(): number {
    return this.seq;
  }

  /** The text of the last message a turn ended with: the agent's final answer. */
  get finalText(): string {
    return this.answer;
  }

  chunk(state: ProjectionState, kind: ItemKind, content: Obj): void {
    const text = content.type === "text" ? String(content.text) : `[${cutText(String(content.type), 40)} content]`;
    let item = kind === "assistant_message" ? this.message : this.thought;
    if (!item) {
      item = { itemId: `${state.turnId}_item_${++this.seq}${state.generationSuffix()}`, kind, text: "" };
      state.turnEvent("item.started", { kind, text: "" }, item.itemId);
      if (kind === "assistant_message") this.message = item;
      else this.thought = item;
    }
    if (item.text.length < MAX_TEXT) item.text = cutText(item.text + text, MAX_TEXT);
    state.turnEvent("item.delta", { text }, item.itemId);
  }

  /** The turn ended: its open items complete, the message on the `final` channel when the agent answered (seed 002 rule 7). */
  flush(state: ProjectionState, answered: boolean): void {
    for (const item of [this.thought, this.message]) {
      if (item)
        state.turnEvent(
          "item.completed",
          {
            kind: item.kind,
            text: item.text,
            ...(answered && item.kind === "assistant_message" ? { channel: "final" } : {}),
          },
          item.itemId,
        );
    }
    if (this.message) this.answer = this.message.text;
    this.message = this.thought = null;
  }
}
