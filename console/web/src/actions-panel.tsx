import { useState } from "preact/hooks";
import type { RunView } from "./api.js";
import { commandState, OutcomeLine } from "./command-outcome.js";
import type { RunCommands } from "./conversation/use-command.js";

/**
 * Interrupt and cancel (cancel asks to be confirmed), each with its receipt, then where the
 * command is; the run's commands so far. Once the run has ended, there is nothing to send.
 * (Requests are answered where they were asked, in the conversation.)
 */
export function ActionsPanel({ view, command }: { view: RunView; command: RunCommands }) {
  const [confirming, setConfirming] = useState(false);
  const { busy, send } = command;
  const turnId = view.session.activeTurnId;
  const ended = view.session.terminal !== null || view.run.state !== "live";
  return (
    <section aria-labelledby="actions-title" class="actions">
      <h2 id="actions-title">Act</h2>
      {ended ? (
        <p data-testid="ended-note">The run has ended: it takes no more commands.</p>
      ) : (
        <>
          <div class="buttons">
            <button
              type="button"
              data-testid="interrupt"
              disabled={busy}
              aria-describedby="interrupt-note"
              onClick={() =>
                void send("action", "turn.interrupt", { ...(turnId ? { turnId } : {}), reason: "operator" })
              }
            >
              Interrupt the turn
            </button>
            {confirming ? (
              <>
                <button
                  type="button"
                  class="danger"
                  data-testid="confirm-cancel"
                  disabled={busy}
                  onClick={() => (setConfirming(false), void send("action", "run.cancel", { reason: "operator" }))}
                >
                  Confirm cancel
                </button>
                <button type="button" onClick={() => setConfirming(false)}>
                  Keep the run going
                </button>
              </>
            ) : (
              <button
                type="button"
                class="danger"
                data-testid="cancel-run"
                disabled={busy}
                onClick={() => setConfirming(true)}
              >
                Cancel the run
              </button>
            )}
          </div>
          <p id="interrupt-note" class="interrupt-note">
            Interrupt asks the agent to stop the turn it is working on; what it did so far stays, and the run ends with
            that turn. Cancel ends the whole run.
          </p>
        </>
      )}
      <OutcomeLine outcome={command.outcomeFor("action")} commands={view.commands} />
      {view.commands.length > 0 && (
        <details>
          <summary>Commands ({view.commands.length})</summary>
          <ol class="commands">
            {view.commands.map((c) => (
              <li key={c.commandId}>
                <code>{c.commandId}</code> {c.type}: {commandState(c)}
              </li>
            ))}
          </ol>
        </details>
      )}
    </section>
  );
}
