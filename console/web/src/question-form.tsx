import { useState } from "preact/hooks";
import type { PRPQuestionResponse, PRPQuestionSet } from "../../../src/contract/generated/types.js";
import { responseMismatch } from "../../../src/contract/question-rules.js";
import type { RequestDetail } from "./api.js";

type Question = PRPQuestionSet["questions"][number];
interface Draft {
  selected: string[];
  text: string;
}

/** The question response (paperclip.question_response.v1) the drafts make: an unanswered optional question is left out. */
function responseOf(set: PRPQuestionSet, drafts: Record<string, Draft>): PRPQuestionResponse {
  const answers: PRPQuestionResponse["answers"] = {};
  for (const q of set.questions) {
    const d = drafts[q.id] ?? { selected: [], text: "" };
    if (d.selected.length > 0) answers[q.id] = { selectedOptionIds: d.selected as [string, ...string[]] };
    else if (d.text !== "") answers[q.id] = { text: d.text };
  }
  return { schema: "paperclip.question_response.v1", answers };
}

function QuestionField({
  q,
  name,
  draft,
  onChange,
}: {
  q: Question;
  name: string;
  draft: Draft;
  onChange: (d: Draft) => void;
}) {
  const options = q.options ?? [];
  const pick = (id: string, on: boolean) => {
    if (q.answerMode === "single_select") return onChange({ selected: on ? [id] : [], text: "" });
    onChange({ ...draft, selected: on ? [...draft.selected, id] : draft.selected.filter((s) => s !== id) });
  };
  const text = (label: string, placeholder?: string) => (
    <label>
      {label}{" "}
      <input
        type="text"
        value={draft.text}
        placeholder={placeholder}
        onInput={(e) =>
          onChange({
            selected: q.answerMode === "multi_select" ? draft.selected : [],
            text: (e.target as HTMLInputElement).value,
          })
        }
      />
    </label>
  );
  return (
    <fieldset data-question-id={q.id}>
      <legend>
        {q.header ? `${q.header}: ` : ""}
        {q.prompt}
        {q.required ? " (required)" : " (optional)"}
      </legend>
      {q.helpText && <p class="help">{q.helpText}</p>}
      {q.answerMode === "text"
        ? text("Your answer")
        : options.map((o) => (
            <label key={o.id}>
              <input
                type={q.answerMode === "single_select" ? "radio" : "checkbox"}
                name={name}
                value={o.id}
                checked={draft.selected.includes(o.id)}
                onChange={(e) => pick(o.id, (e.target as HTMLInputElement).checked)}
              />{" "}
              {o.label}
              {o.recommended ? " (recommended)" : ""}
              {o.description ? ` — ${o.description}` : ""}
            </label>
          ))}
      {q.recommendationRationale && <p class="help">Why recommended: {q.recommendationRationale}</p>}
      {q.customAnswer && text(q.customAnswer.label ?? "Another answer", q.customAnswer.placeholder)}
    </fieldset>
  );
}

/**
 * A structured question set, rendered as a form (one field per question, by answer mode) and
 * answered with a question response, checked here by the same rules the runner applies.
 */
export function QuestionForm({
  request,
  set,
  busy,
  onAnswer,
}: {
  request: RequestDetail;
  set: PRPQuestionSet;
  busy: boolean;
  onAnswer: (resolution: Record<string, unknown>) => void;
}) {
  const [drafts, setDrafts] = useState<Record<string, Draft>>({});
  const response = responseOf(set, drafts);
  const problem = responseMismatch(set, response, "");
  const id = `request-${request.requestId}`;
  const submit = (e: Event) => {
    e.preventDefault();
    if (!problem) onAnswer({ action: "submit", response });
  };
  return (
    <form class="request" aria-labelledby={`${id}-prompt`} onSubmit={submit} data-request-id={request.requestId}>
      <p id={`${id}-prompt`}>
        <strong>{set.title ?? "Questions"}:</strong> {request.prompt}
      </p>
      {set.description && <p class="help">{set.description}</p>}
      {set.questions.map((q) => (
        <QuestionField
          key={q.id}
          q={q}
          name={`${id}-${q.id}`}
          draft={drafts[q.id] ?? { selected: [], text: "" }}
          onChange={(d) => setDrafts({ ...drafts, [q.id]: d })}
        />
      ))}
      {problem && (
        <p class="help" data-testid="answer-problem">
          Not ready to send: {problem.message}
        </p>
      )}
      <button type="submit" disabled={busy || problem !== null}>
        {set.submitLabel ?? "Send answers"}
      </button>
    </form>
  );
}
