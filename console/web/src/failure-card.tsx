import { stalledWords } from "../../../src/contract/stall-words.js";
import type { RunView } from "./api.js";

/** What the terminal says of why: its stop reason, else the runner's reconciliation reason. */
function terminalReason(terminal: Record<string, unknown>): string | null {
  const stalled = stalledWords(terminal);
  if (stalled) return stalled;
  const stop = terminal.stopReason as { code?: string; message?: string; kind?: string } | undefined;
  // An agent that could not start reads as prp run says it (src/cli/stop-line.ts).
  if (stop?.code && stop.kind === "agent_start")
    return `cannot start the agent: ${stop.code}${stop.message ? ` — ${stop.message}` : ""}`;
  if (stop?.code) return [stop.kind, stop.code, stop.message].filter(Boolean).join(": ");
  const rec = terminal.reconciliation as { reason?: string } | undefined;
  return rec?.reason ? rec.reason.replaceAll("_", " ") : null;
}

/** "Why it failed", on a run that did not succeed: in words, from its events, not a JSON block. */
export function FailureCard({ view }: { view: RunView }) {
  const terminal = view.session.terminal as unknown as Record<string, unknown> | null;
  if (!terminal || terminal.runTerminalState === "succeeded") return null;
  const { messages, diagnostics, harnessExit } = view.failure;
  const reason = terminalReason(terminal);
  return (
    <section aria-labelledby="failure-title" class="failure" data-testid="failure-card">
      <h2 id="failure-title">Why the run {String(terminal.runTerminalState)}</h2>
      <p data-testid="failure-reason">
        The run ended {String(terminal.runTerminalState)} (turn {String(terminal.turnTerminalState)})
        {reason ? `: ${reason}` : "."}
      </p>
      {messages.length > 0 && (
        <>
          <h3>What the harness said</h3>
          <ul data-testid="failure-messages">
            {messages.map((m, i) => (
              <li key={i}>{m}</li>
            ))}
          </ul>
        </>
      )}
      {diagnostics.length > 0 && (
        <>
          <h3>Diagnostics</h3>
          <ul data-testid="failure-diagnostics">
            {diagnostics.map((d, i) => (
              <li key={i}>
                <code>{d.code}</code> ({d.eventType}): {d.message}
              </li>
            ))}
          </ul>
        </>
      )}
      {harnessExit && (
        <>
          <h3>The harness's exit</h3>
          <p data-testid="harness-exit">
            {harnessExit.signal
              ? `Killed by signal ${harnessExit.signal}.`
              : `Exit code ${harnessExit.exitCode ?? "unknown"}.`}
          </p>
          {harnessExit.stderrTail.length > 0 && (
            <>
              <p>
                The last of its stderr
                {harnessExit.droppedLines > 0 ? ` (${harnessExit.droppedLines} earlier lines not kept)` : ""}:
              </p>
              <pre data-testid="stderr-tail">{harnessExit.stderrTail.join("\n")}</pre>
            </>
          )}
        </>
      )}
    </section>
  );
}
