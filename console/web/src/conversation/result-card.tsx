import type { ViewSession } from "../api.js";

/** The result the agent proposed, and how the run ended, in words. */
export function ResultCard({ session: s }: { session: ViewSession }) {
  if (!s.proposedResult && !s.terminal) return null;
  const r = s.proposedResult;
  const t = s.terminal;
  return (
    <section
      class={`card result ${t && t.runTerminalState !== "succeeded" ? "result-bad" : ""}`}
      data-testid="result-card"
      aria-label="Result"
    >
      {r && (
        <p data-testid="result">
          <strong>{r.reportedWorkDisposition}</strong>: {r.summary}
        </p>
      )}
      {r && r.completionClaim.remainingWork.length > 0 && (
        <p class="muted">Remaining work: {r.completionClaim.remainingWork.length} item(s).</p>
      )}
      {t ? (
        <p class="muted">
          The run ended:{" "}
          <span data-testid="terminal">
            {t.turnTerminalState} / {t.runTerminalState} ({t.reportedWorkDisposition})
          </span>
        </p>
      ) : (
        <p class="muted">Proposed; the run has not ended yet.</p>
      )}
    </section>
  );
}
