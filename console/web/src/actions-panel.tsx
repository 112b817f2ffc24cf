import { useState } from "preact/hooks";
import { sendCommand, type RequestDetail, type RunView } from "./api.js";
import { commandState, OutcomeLine, type Outcome } from "./command-outcome.js";
import { PermissionForm, TextForm } from "./permission-form.js";
import { QuestionForm } from "./question-form.js";

type Answer = (resolution: Record<string, unknown>) => void;

function RequestForm({ request, busy, onAnswer }: { request: RequestDetail; busy: boolean; onAnswer: Answer }) {
  if (request.input) return <QuestionForm request={request} set={request.input} busy={busy} onAnswer={onAnswer} />;
  if (request.choices.length > 0) return <PermissionForm request={request} busy={busy} onAnswer={onAnswer} />;
  return <TextForm request={request} busy={busy} onAnswer={onAnswer} />;
}

/**
 * Answers to pending requests, interrupt and cancel (cancel asks to be confirmed); each shows
 * its receipt, then where the command is. Once the run has ended, there is nothing to send.
 */
export function ActionsPanel({ runId, view, onSent }: { runId: string; view: RunView; onSent?: () => void }) {
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const send = async (type: string, payload: Record<string, unknown>) => {
    setBusy(true);
    const sent = await sendCommand(runId, type, payload);
    setBusy(false);
    setOutcome(sent.ok ? { receipt: sent.value.receipt } : { error: sent.error });
    if (sent.ok) onSent?.();
  };
  const turnId = view.session.activeTurnId;
  const ended = view.session.terminal !== null || view.run.state !== "live";
  // A request answered but not yet resolved by the runner keeps its form off (an answer is sent
  // once), unless the runner rejected that answer: then it is still waiting for one.
  const answered = new Set(
    view.commands.filter((c) => c.type === "request.resolve" && c.status !== "rejected").map((c) => c.requestId),
  );
  const pending = ended ? [] : view.requests.filter((r) => !answered.has(r.requestId));
  return (
    <section aria-labelledby="actions-title" class="actions">
      <h2 id="actions-title">Act</h2>
      {pending.map((request) => (
        <RequestForm
          key={request.requestId}
          request={request}
          busy={busy}
          onAnswer={(resolution) =>
            send("request.resolve", { requestId: request.requestId, ...(turnId ? { turnId } : {}), resolution })
          }
        />
      ))}
      {ended ? (
        <p data-testid="ended-note">The run has ended: it takes no more commands.</p>
      ) : (
        pending.length === 0 && <p>No question is waiting for an answer.</p>
      )}
      {!ended && (
        <div class="buttons">
          <button
            type="button"
            disabled={busy}
            onClick={() => send("turn.interrupt", { ...(turnId ? { turnId } : {}), reason: "operator" })}
          >
            Interrupt the turn
          </button>
          {confirming ? (
            <>
              <button
                type="button"
                class="danger"
                disabled={busy}
                onClick={() => (setConfirming(false), send("run.cancel", { reason: "operator" }))}
              >
                Confirm cancel
              </button>
              <button type="button" onClick={() => setConfirming(false)}>
                Keep the run going
              </button>
            </>
          ) : (
            <button type="button" class="danger" disabled={busy} onClick={() => setConfirming(true)}>
              Cancel the run
            </button>
          )}
        </div>
      )}
      <OutcomeLine outcome={outcome} commands={view.commands} />
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
