import { useState } from "preact/hooks";
import { sendCommand, type ApiRefusal, type CommandReceipt, type RunView, type TimelineEvent } from "./api.js";

type Outcome = { receipt: CommandReceipt } | { error: ApiRefusal } | null;

interface Choice {
  key: string;
  label: string;
}

/** The choices the harness offered with a request (its runtime_request.created event). */
function choicesOf(timeline: TimelineEvent[], requestId: string): Choice[] {
  for (const { event } of timeline) {
    const request = (event.payload as { request?: { requestId?: string; choices?: Choice[] } }).request;
    if (event.eventType === "runtime_request.created" && request?.requestId === requestId) return request.choices ?? [];
  }
  return [];
}

function OutcomeLine({ outcome }: { outcome: Outcome }) {
  if (outcome === null) return null;
  if ("error" in outcome)
    return (
      <p role="alert" class="refusal" data-testid="refusal">
        Refused: <code>{outcome.error.code}</code>
        {outcome.error.path ? ` at ${outcome.error.path}` : ""}: {outcome.error.message}
      </p>
    );
  const r = outcome.receipt;
  return (
    <p role="status" class="receipt" data-testid="receipt">
      {r.created === false ? "Already queued" : "Queued"} {r.type} as <code>{r.commandId}</code> (controllerSeq {r.controllerSeq}); the authority delivers it to the runner.
    </p>
  );
}

/** Answers to pending requests, interrupt and cancel; each shows its receipt or its refusal. */
export function ActionsPanel({ runId, view, timeline }: { runId: string; view: RunView; timeline: TimelineEvent[] }) {
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [busy, setBusy] = useState(false);
  const send = async (type: string, payload: Record<string, unknown>) => {
    setBusy(true);
    const sent = await sendCommand(runId, type, payload);
    setBusy(false);
    setOutcome(sent.ok ? { receipt: sent.value.receipt } : { error: sent.error });
  };
  const turnId = view.session.activeTurnId;
  const pending = view.session.requests.filter((r) => r.status === "pending");
  return (
    <section aria-labelledby="actions-title" class="actions">
      <h2 id="actions-title">Act</h2>
      {pending.map((request) => (
        <RequestForm key={request.requestId} request={request} choices={choicesOf(timeline, request.requestId)} busy={busy} onAnswer={(resolution) => send("request.resolve", { requestId: request.requestId, ...(turnId ? { turnId } : {}), resolution })} />
      ))}
      {pending.length === 0 && <p>No question is waiting for an answer.</p>}
      <div class="buttons">
        <button type="button" disabled={busy} onClick={() => send("turn.interrupt", { ...(turnId ? { turnId } : {}), reason: "operator" })}>
          Interrupt the turn
        </button>
        <button type="button" class="danger" disabled={busy} onClick={() => send("run.cancel", { reason: "operator" })}>
          Cancel the run
        </button>
      </div>
      <OutcomeLine outcome={outcome} />
      {view.commands.length > 0 && (
        <details>
          <summary>Commands ({view.commands.length})</summary>
          <ol class="commands">
            {view.commands.map((c) => (
              <li key={c.commandId}>
                <code>{c.commandId}</code> {c.type}: {c.status ?? "pending"}
              </li>
            ))}
          </ol>
        </details>
      )}
    </section>
  );
}

function RequestForm(props: { request: RunView["session"]["requests"][number]; choices: Choice[]; busy: boolean; onAnswer: (resolution: Record<string, unknown>) => void }) {
  const { request, choices, busy, onAnswer } = props;
  const [choice, setChoice] = useState(choices[0]?.key ?? "");
  const [text, setText] = useState("");
  const id = `request-${request.requestId}`;
  const submit = (e: Event) => {
    e.preventDefault();
    if (choices.length > 0) onAnswer(choice.startsWith("deny") ? { action: "decline", choice } : { action: "accept", choice });
    else onAnswer({ action: "submit", text });
  };
  return (
    <form class="request" aria-labelledby={`${id}-prompt`} onSubmit={submit} data-request-id={request.requestId}>
      <p id={`${id}-prompt`}>
        <strong>{request.type === "permission" ? "Permission asked" : "Question"}:</strong> {request.prompt}
      </p>
      {choices.length > 0 ? (
        <fieldset>
          <legend>Your answer</legend>
          {choices.map((c) => (
            <label key={c.key}>
              <input type="radio" name={`${id}-choice`} value={c.key} checked={choice === c.key} onChange={() => setChoice(c.key)} /> {c.label}
            </label>
          ))}
        </fieldset>
      ) : (
        <label>
          Your answer <input type="text" name="answer" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        </label>
      )}
      <button type="submit" disabled={busy}>
        Send answer
      </button>
    </form>
  );
}
