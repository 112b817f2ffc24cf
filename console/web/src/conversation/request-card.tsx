import type { CommandReceipt, RequestDetail, SessionRequestView } from "../api.js";
import { OutcomeLine, type Outcome } from "../command-outcome.js";
import { PermissionForm, TextForm } from "../permission-form.js";
import { QuestionForm } from "../question-form.js";

type Answer = (resolution: Record<string, unknown>) => void;

/** The form that answers a pending request: a question set, a permission's choices, or text. */
export function RequestForm({ request, busy, onAnswer }: { request: RequestDetail; busy: boolean; onAnswer: Answer }) {
  if (request.input) return <QuestionForm request={request} set={request.input} busy={busy} onAnswer={onAnswer} />;
  if (request.choices.length > 0) return <PermissionForm request={request} busy={busy} onAnswer={onAnswer} />;
  return <TextForm request={request} busy={busy} onAnswer={onAnswer} />;
}

/**
 * A request where it was asked in the conversation: its form while it waits for the person (and
 * the answer's receipt), else what was asked and what became of it.
 */
export function RequestCard({
  asked,
  pending,
  busy,
  onAnswer,
  outcome,
  commands,
}: {
  asked: SessionRequestView | undefined;
  pending: RequestDetail | undefined;
  busy: boolean;
  onAnswer: Answer;
  outcome: Outcome;
  commands: CommandReceipt[];
}) {
  if (pending)
    return (
      <li class="card request-card waiting" data-testid="request">
        <RequestForm request={pending} busy={busy} onAnswer={onAnswer} />
        <OutcomeLine outcome={outcome} commands={commands} />
      </li>
    );
  if (!asked) return null;
  return (
    <li class="card request-card" data-testid="request" data-status={asked.status}>
      <p class="card-title">
        {asked.type === "permission" ? "Permission asked" : "Question"}: <span class="muted">{asked.prompt}</span>{" "}
        <span class={`state state-${asked.status}`}>{asked.status}</span>
      </p>
      <OutcomeLine outcome={outcome} commands={commands} />
    </li>
  );
}
