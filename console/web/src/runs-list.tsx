import { useEffect, useState } from "preact/hooks";
import { RUNS_STREAM, type RunRow } from "./api.js";
import { openStream } from "./stream.js";
import { duration, program, time } from "./format.js";

/** Every run, newest first, updated live from the runs stream. */
export function RunsList() {
  const [runs, setRuns] = useState<RunRow[] | null>(null);
  const [refused, setRefused] = useState<string | null>(null);
  useEffect(() => {
    const source = openStream(RUNS_STREAM);
    source.addEventListener("runs", (e) => setRuns(JSON.parse((e as MessageEvent<string>).data) as RunRow[]));
    // A refused stream is never retried: say why rather than show "Loading" for ever.
    source.onerror = () => setRefused(source.refused);
    return () => source.close();
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
