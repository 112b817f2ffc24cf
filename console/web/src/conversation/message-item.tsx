import type { ViewItem } from "../api.js";
import { BoundedText } from "./bounded-text.js";

const ASSISTANT = new Set(["assistant_message", "agent_message", "message"]);
const THINKING = new Set(["reasoning", "reasoning_summary", "thought", "thinking"]);

/** One item of the session: the agent's message, its thinking (folded), or another item (a command, a file change). */
export function MessageItem({ item }: { item: ViewItem }) {
  if (ASSISTANT.has(item.kind))
    return (
      <li class="bubble assistant" data-testid="assistant-message" data-status={item.status}>
        <span class="who">Agent</span>
        <BoundedText text={item.text || "…"} total={item.textLength} />
      </li>
    );
  if (THINKING.has(item.kind))
    return (
      <li class="bubble thinking-item">
        <details data-testid="thinking">
          <summary>Thinking{item.status === "running" ? "…" : ""}</summary>
          <BoundedText text={item.text} total={item.textLength} />
        </details>
      </li>
    );
  if (item.kind === "user_message")
    return (
      <li class="bubble user" data-testid="user-message">
        <span class="who">You</span>
        <BoundedText text={item.text} total={item.textLength} />
      </li>
    );
  return (
    <li class="card activity" data-testid="item" data-status={item.status}>
      <p class="card-title">
        {item.kind.replaceAll("_", " ")} <span class={`state state-${item.status}`}>{item.status}</span>
      </p>
      {(item.text || item.status === "running") && <BoundedText text={item.text || "…"} total={item.textLength} />}
    </li>
  );
}

/** What the person said: the run's prompt, or a follow-up, with where its command is when it did not apply. */
export function UserMessage({ text, note }: { text: string; note?: string | null }) {
  return (
    <li class="bubble user" data-testid="user-message">
      <span class="who">You</span>
      <BoundedText text={text} />
      {note && <p class="muted">{note}</p>}
    </li>
  );
}
