import { useState } from "preact/hooks";
import { actionForChoice } from "../../../src/contract/permission-choices.js";
import type { RequestDetail } from "./api.js";

/**
 * A permission request's choices. Nothing is chosen for the person: the send button waits for
 * a choice, and the choice's key decides the action (the project's one mapping: "allow always"
 * is accept_for_session, "deny always" a decline of that choice).
 */
export function PermissionForm({
  request,
  busy,
  onAnswer,
}: {
  request: RequestDetail;
  busy: boolean;
  onAnswer: (resolution: Record<string, unknown>) => void;
}) {
  const [choice, setChoice] = useState<string | null>(null);
  const id = `request-${request.requestId}`;
  const submit = (e: Event) => {
    e.preventDefault();
    if (choice !== null) onAnswer({ action: actionForChoice(choice), choice });
  };
  return (
    <form class="request" aria-labelledby={`${id}-prompt`} onSubmit={submit} data-request-id={request.requestId}>
      <p id={`${id}-prompt`}>
        <strong>Permission asked:</strong> {request.prompt}
      </p>
      <fieldset>
        <legend>Your answer</legend>
        {request.choices.map((c) => (
          <label key={c.key}>
            <input
              type="radio"
              name={`${id}-choice`}
              value={c.key}
              checked={choice === c.key}
              onChange={() => setChoice(c.key)}
            />{" "}
            {c.label}
          </label>
        ))}
      </fieldset>
      <button type="submit" disabled={busy || choice === null}>
        Send answer
      </button>
    </form>
  );
}

/** A question without a question set: answered with text. */
export function TextForm({
  request,
  busy,
  onAnswer,
}: {
  request: RequestDetail;
  busy: boolean;
  onAnswer: (resolution: Record<string, unknown>) => void;
}) {
  const [text, setText] = useState("");
  const id = `request-${request.requestId}`;
  const submit = (e: Event) => {
    e.preventDefault();
    onAnswer({ action: "submit", text });
  };
  return (
    <form class="request" aria-labelledby={`${id}-prompt`} onSubmit={submit} data-request-id={request.requestId}>
      <p id={`${id}-prompt`}>
        <strong>Question:</strong> {request.prompt}
      </p>
      <label>
        Your answer{" "}
        <input type="text" name="answer" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit" disabled={busy || text.trim() === ""}>
        Send answer
      </button>
    </form>
  );
}
