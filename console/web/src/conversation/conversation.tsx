import { Fragment } from "preact";
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import type { RunView } from "../api.js";
import { conversationEntries } from "./conversation-entries.js";
import { GoalCard } from "./goal-card.js";
import { PlanChecklist } from "./plan-checklist.js";
import { ResultCard } from "./result-card.js";
import type { RunCommands } from "./use-command.js";
import "./conversation.css";

/** How close to the end (px) still counts as reading the newest. */
const AT_END = 48;

/**
 * The run's conversation, followed live: while the reader is at its end, each new entry scrolls
 * into view; scrolled up, the entries that arrived are counted on a pill that brings them back.
 * `command` is null where nothing can be sent (a replayed file).
 */
export function Conversation({ view, command }: { view: RunView; command: RunCommands | null }) {
  const entries = conversationEntries(view, command);
  const scroller = useRef<HTMLOListElement>(null);
  const atEnd = useRef(true);
  const seen = useRef(entries.length);
  const [unseen, setUnseen] = useState(0);
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    if (atEnd.current) {
      el.scrollTop = el.scrollHeight;
      seen.current = entries.length;
    } else if (entries.length !== seen.current) setUnseen(Math.max(0, entries.length - seen.current));
  });
  const onScroll = () => {
    const el = scroller.current!;
    atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight <= AT_END;
    if (atEnd.current) {
      seen.current = entries.length;
      setUnseen(0);
    }
  };
  const toEnd = () => {
    const el = scroller.current!;
    atEnd.current = true;
    el.scrollTop = el.scrollHeight;
    seen.current = entries.length;
    setUnseen(0);
  };
  const plans = view.session.plans ?? [];
  // For a screen reader: what needs the person, said once as it changes (a polite live region).
  const asking = view.session.requests.filter((r) => r.status === "pending").at(-1);
  const announcement = view.session.terminal
    ? `The run ended: ${view.session.terminal.runTerminalState}.`
    : asking
      ? `The agent waits for your answer: ${asking.prompt.slice(0, 200)}`
      : unseen > 0
        ? `${unseen} new in the conversation.`
        : "";
  return (
    <section class="conversation" data-testid="conversation" aria-labelledby="conversation-title">
      <h2 id="conversation-title" class="visually-hidden">
        Conversation
      </h2>
      {plans.map((plan, i) => (
        <PlanChecklist key={String(plan.planId ?? i)} plan={plan} />
      ))}
      <p class="visually-hidden" aria-live="polite" data-testid="conversation-announcer">
        {announcement}
      </p>
      <GoalCard session={view.session} />
      <div class="conversation-frame">
        <ol class="conversation-list" ref={scroller} onScroll={onScroll} tabIndex={0} aria-label="Messages">
          {entries.length === 0 && <li class="muted">Nothing said yet.</li>}
          {entries.map((e) => (
            <Fragment key={e.key}>{e.node}</Fragment>
          ))}
          {(view.session.proposedResult || view.session.terminal) && (
            <li class="result-entry">
              <ResultCard session={view.session} />
            </li>
          )}
        </ol>
        {unseen > 0 && (
          <button type="button" class="new-pill" data-testid="conversation-new-pill" onClick={toEnd}>
            {unseen} new ↓
          </button>
        )}
      </div>
    </section>
  );
}
