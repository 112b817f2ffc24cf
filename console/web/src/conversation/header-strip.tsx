import type { RunSpec, RunView } from "../api.js";
import { duration, program, time } from "../format.js";
import type { UsageTotals } from "../../../../src/reducer/snapshot.js";
import { useNow } from "../use-now.js";

/**
 * The session's and turn's states as shown: once run.terminal is in, a session or turn the
 * harness left "running" ended with the run (the terminal says how the turn ended).
 */
function shownStates({ session: s }: RunView): { session: string; turn: string } {
  if (!s.terminal) return { session: s.sessionState, turn: s.turnState };
  const open = s.sessionState === "running" || s.sessionState === "not_started";
  return { session: open ? "ended with the run" : s.sessionState, turn: s.terminal.turnTerminalState };
}

/** Who does the work: the spec's agent (fake script, profile, command), else the harness's program. */
export function agentWords(spec: RunSpec | null, harness: string | null): string {
  const agent = spec?.agent;
  if (agent?.kind === "fake") return `fake script ${agent.script}`;
  if (agent?.kind === "profile") return `profile ${agent.profile}`;
  if (agent?.kind === "command") return program(agent.command.split(/\s+/)[0] ?? agent.command);
  return program(harness);
}

const count = (n: number | null | undefined) => (typeof n === "number" ? n.toLocaleString("en") : "?");

/** Usage in words: the run's own when reported, else the session's so far; null before any report. */
export function usageWords(usage: UsageTotals | undefined): string | null {
  if (!usage || usage.reports === 0) return null;
  const u = usage.runTotal ?? usage.sessionCumulative;
  if (!u) return `${usage.reports} report(s), no figures`;
  const cost = u.providerCostUsd === null ? "" : `, $${u.providerCostUsd.toFixed(4)}`;
  const whose = usage.runTotal ? "" : " (the session's so far)";
  return `${count(u.inputTokens)} tokens in, ${count(u.outputTokens)} out${cost}${whose}`;
}

/** The run at a glance: its state, agent, how long it has run, when it last spoke, usage, and its states in detail. */
export function HeaderStrip({ view }: { view: RunView }) {
  const { session: s, run } = view;
  const live = run.state === "live";
  const now = useNow(live);
  const states = shownStates(view);
  // A live run's duration runs on; its events' times say only when it last spoke.
  const shown = live && run.startedAt ? Math.max(0, now - Date.parse(run.startedAt)) : run.durationMs;
  const lastAt = view.lastEventAt ? Date.parse(view.lastEventAt) : NaN;
  const usage = usageWords(s.usage);
  return (
    <section class="header-strip" aria-label="The run at a glance">
      <p class="strip-main">
        <span class={`state state-${run.state}`} data-testid="run-state">
          {run.state}
        </span>{" "}
        <span data-testid="agent">{agentWords(view.spec, run.harness)}</span>
        {" · "}
        {live ? (
          <span data-testid="elapsed" title={`started ${time(run.startedAt)}`}>
            running for {duration(shown)}
          </span>
        ) : (
          <span data-testid="duration" title={`started ${time(run.startedAt)}`}>
            {duration(shown)}
          </span>
        )}
        {live && Number.isFinite(lastAt) && (
          <>
            {" · "}
            <span data-testid="last-event">last event {Math.max(0, Math.round((now - lastAt) / 1000))} s ago</span>
          </>
        )}
        {usage && (
          <>
            {" · "}
            <span data-testid="usage">{usage}</span>
          </>
        )}
      </p>
      <dl class="strip-facts">
        <dt>Session</dt>
        <dd data-testid="session-state">{states.session}</dd>
        <dt>Turn</dt>
        <dd data-testid="turn-state">
          {states.turn}
          {s.activeTurnId ? ` (${s.activeTurnId})` : ""}
        </dd>
        <dt>Phase</dt>
        <dd>{s.runPhase}</dd>
        <dt>Events</dt>
        <dd data-testid="integrity">
          {s.integrity}; {s.duplicateEventIds.length} duplicate(s), {s.gaps.length} gap(s),{" "}
          {s.outOfOrderEventIds.length} out of order
        </dd>
      </dl>
    </section>
  );
}
