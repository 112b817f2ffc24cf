import type { RunView } from "./api.js";
import { duration, program, time } from "./format.js";
import { useNow } from "./use-now.js";

/**
 * The session's and turn's states as shown: once run.terminal is in, a session or turn the
 * harness left "running" ended with the run (the terminal says how the turn ended).
 */
function shownStates({ session: s }: RunView): { session: string; turn: string } {
  if (!s.terminal) return { session: s.sessionState, turn: s.turnState };
  const open = s.sessionState === "running" || s.sessionState === "not_started";
  return { session: open ? "ended with the run" : s.sessionState, turn: s.terminal.turnTerminalState };
}

const Json = ({ value }: { value: unknown }) => <pre class="json">{JSON.stringify(value, null, 2)}</pre>;

/** The reduced session (src/reducer): state, items, tools, plan, usage, goal, integrity, result, terminal. */
export function SessionPanel({ view }: { view: RunView }) {
  const { session: s, run } = view;
  const live = run.state === "live";
  const now = useNow(live);
  const states = shownStates(view);
  // A live run's duration runs on; its events' times say only when it last spoke.
  const shownDuration = live && run.startedAt ? Math.max(0, now - Date.parse(run.startedAt)) : run.durationMs;
  return (
    <section aria-labelledby="session-title" class="session">
      <h2 id="session-title">Session</h2>
      <dl class="facts">
        <dt>Run state</dt>
        <dd data-testid="run-state">{run.state}</dd>
        <dt>Session</dt>
        <dd data-testid="session-state">{states.session}</dd>
        <dt>Turn</dt>
        <dd data-testid="turn-state">
          {states.turn}
          {s.activeTurnId ? ` (${s.activeTurnId})` : ""}
        </dd>
        <dt>Phase</dt>
        <dd>{s.runPhase}</dd>
        <dt>Harness</dt>
        <dd>{program(run.harness)}</dd>
        <dt>Started</dt>
        <dd>{time(run.startedAt)}</dd>
        <dt>Duration</dt>
        <dd data-testid="duration">{duration(shownDuration)}</dd>
        <dt>Integrity</dt>
        <dd data-testid="integrity">
          {s.integrity}; {s.duplicateEventIds.length} duplicate(s), {s.gaps.length} gap(s),{" "}
          {s.outOfOrderEventIds.length} out of order
        </dd>
      </dl>
      <h3>Items ({s.items.length})</h3>
      {s.items.length === 0 ? (
        <p>None yet.</p>
      ) : (
        <ul class="items">
          {s.items.map((item) => (
            <li key={item.itemId}>
              <strong>{item.kind}</strong> <span class={`state state-${item.status}`}>{item.status}</span>
              <pre>
                {item.textLength > item.text.length
                  ? `…(${item.textLength - item.text.length} earlier characters) `
                  : ""}
                {item.text || "…"}
              </pre>
            </li>
          ))}
        </ul>
      )}
      {s.toolExecutions && (
        <details>
          <summary>Tool executions ({s.toolExecutions.length})</summary>
          <Json value={s.toolExecutions} />
        </details>
      )}
      {s.plans && (
        <details>
          <summary>Plan</summary>
          <Json value={s.plans} />
        </details>
      )}
      {s.usage && (
        <details>
          <summary>Usage ({s.usage.reports} reports)</summary>
          <Json value={s.usage} />
        </details>
      )}
      {s.sessionGoal && (
        <details>
          <summary>Goal</summary>
          <Json value={s.sessionGoal} />
        </details>
      )}
      {s.gaps.length > 0 && (
        <details open>
          <summary>Gaps</summary>
          <Json value={s.gaps} />
        </details>
      )}
      <h3>Result</h3>
      {s.proposedResult ? (
        <p data-testid="result">
          <strong>{s.proposedResult.reportedWorkDisposition}</strong>: {s.proposedResult.summary}
        </p>
      ) : (
        <p>None proposed yet.</p>
      )}
      <h3>Terminal</h3>
      {s.terminal ? (
        <details open>
          <summary data-testid="terminal">
            {s.terminal.turnTerminalState} / {s.terminal.runTerminalState} ({s.terminal.reportedWorkDisposition})
          </summary>
          <Json value={s.terminal} />
        </details>
      ) : (
        <p>The run has not ended.</p>
      )}
    </section>
  );
}
