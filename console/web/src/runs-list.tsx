import { useEffect, useState } from "preact/hooks";
import { fetchRuns, type RunRow } from "./api.js";
import { duration, program, time } from "./format.js";

/** How often the list is read again: it follows the runs while it is open. */
export const RUNS_EVERY_MS = 1000;

/** Every run, newest first, read from the API's run list every RUNS_EVERY_MS. */
export function RunsList() {
  const [runs, setRuns] = useState<RunRow[] | null>(null);
  const [refused, setRefused] = useState<string | null>(null);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let closed = false;
    const read = async () => {
      const answer = await fetchRuns();
      if (closed) return;
      if (answer.ok) setRuns(answer.value);
      // A refusal (a 4xx: a wrong token) is not asked again: say why rather than show "Loading" for ever.
      else if (answer.status >= 400 && answer.status < 500)
        return setRefused(`${answer.status} ${answer.error.code}: ${answer.error.message}`);
      timer = setTimeout(() => void read(), RUNS_EVERY_MS);
    };
    void read();
    return () => {
      closed = true;
      clearTimeout(timer);
    };
  }, []);
  if (refused !== null)
    return (
      <p role="alert" class="refusal" data-testid="runs-refused">
        The console refused to list the runs: {refused}
      </p>
    );
  if (runs === null) return <p role="status">Loading runs…</p>;
  if (runs.length === 0) return <p role="status">No runs yet. They appear here as soon as they start.</p>;
  return (
    <table class="runs">
      <caption>Runs ({runs.length}), updating live</caption>
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">State</th>
          <th scope="col">Harness</th>
          <th scope="col">Started</th>
          <th scope="col">Duration</th>
          <th scope="col">Events</th>
          <th scope="col">Result</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <tr key={r.runId} data-run-id={r.runId}>
            <th scope="row">
              <a href={`#/run/${encodeURIComponent(r.runId)}`}>{r.runId}</a>
            </th>
            <td>
              <span class={`state state-${r.state}`}>{r.state}</span>
              {r.note !== null ? <span class="state-note"> {r.note}</span> : null}
            </td>
            <td>{program(r.harness)}</td>
            <td>{time(r.startedAt)}</td>
            <td>{duration(r.durationMs)}</td>
            <td class="event-count">{r.eventCount}</td>
            <td>{r.disposition ?? "–"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
