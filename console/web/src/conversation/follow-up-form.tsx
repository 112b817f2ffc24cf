import { useState } from "preact/hooks";
import type { RunView } from "../api.js";
import { OutcomeLine } from "../command-outcome.js";
import type { RunCommands } from "./use-command.js";

/** The most a follow-up may say: as much as a run's prompt. */
const MAX_TEXT = 65_536;

/**
 * A message to the agent of a live run: turn.start when no turn runs, turn.steer into the one
 * that runs. The API's refusal, or the receipt and then the runner's result, is shown under it.
 */
export function FollowUpForm({ view, command }: { view: RunView; command: RunCommands }) {
  const [text, setText] = useState("");
  const running = view.session.turnState === "running";
  const type = running ? "turn.steer" : "turn.start";
  const submit = async (e: Event) => {
    e.preventDefault();
    if (text.trim() === "") return;
    if (await command.send("follow-up", type, { text })) setText("");
  };
  return (
    <form class="follow-up" onSubmit={submit} aria-labelledby="follow-up-label">
      <label id="follow-up-label" for="follow-up">
        {running ? "Steer the running turn" : "Send the agent a message"}
      </label>
      <textarea
        id="follow-up"
        data-testid="follow-up"
        rows={3}
        maxLength={MAX_TEXT}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) void submit(e);
        }}
      />
      <div class="buttons">
        <button type="submit" data-testid="send-follow-up" disabled={command.busy || text.trim() === ""}>
          Send
        </button>
        <span class="muted">
          {running
            ? "Sent as turn.steer: the agent reads it during the turn it is running, if its runner can steer."
            : "Sent as turn.start: it starts the agent's next turn."}
        </span>
      </div>
      <OutcomeLine outcome={command.outcomeFor("follow-up")} commands={view.commands} />
    </form>
  );
}
