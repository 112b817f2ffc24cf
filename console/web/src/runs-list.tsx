import { useState } from "preact/hooks";
import { fetchRunPage, labelPair, type ApiRefusal, type ListRow, type RunFilter, type RunState } from "./api.js";
import { CancelQueued } from "./cancel-queued.js";
import { duration } from "./format.js";
import { usePageTitle } from "./page-title.js";
import { Ago } from "./relative-time.js";
import { runHref } from "./route.js";
import { useNow } from "./use-now.js";
import { usePoll } from "./use-poll.js";
import "./runs-list.css";

/** How often the list is read again: it follows the runs while it is open. */
export const RUNS_EVERY_MS = 1000;
/** Runs on a page; `runs-next` and `runs-prev` move by the API's cursor. */
export const RUNS_PAGE = 25;

const STATES: RunState[] = ["queued", "claimed", "pending", "running", "ended"];
const NO_FILTER: RunFilter = { state: "", label: "", agent: "", text: "" };

function Filters({ filter, onChange }: { filter: RunFilter; onChange: (f: RunFilter) => void }) {
  const set = (key: keyof RunFilter) => (e: Event) =>
    onChange({ ...filter, [key]: (e.currentTarget as HTMLInputElement | HTMLSelectElement).value });
  const badLabel = filter.label.trim() !== "" && labelPair(filter.label) === null;
  return (
    <form class="run-filters" role="search" aria-label="Filter the runs" onSubmit={(e) => e.preventDefault()}>
      <label>
        State
        <select data-testid="filter-state" value={filter.state} onChange={set("state")}>
          <option value="">any</option>
          {STATES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <label>
        Label
        <input
          data-testid="filter-label"
          placeholder="key=value"
          value={filter.label}
          onInput={set("label")}
          aria-invalid={badLabel}
          aria-describedby={badLabel ? "filter-label-hint" : undefined}
        />
      </label>
      <label>
        Agent
        <input
          data-testid="filter-agent"
          placeholder="script, profile or program"
          value={filter.agent}
          onInput={set("agent")}
        />
      </label>
      <label>
        Search
        <input
          data-testid="filter-search"
          type="search"
          placeholder="run id or spec text"
          value={filter.text}
          onInput={set("text")}
        />
      </label>
      {badLabel && (
        <p id="filter-label-hint" class="filter-hint">
          A label filter is <code>key=value</code>: it is not applied until it is one.
        </p>
      )}
    </form>
  );
}

function agentCell(r: ListRow) {
  if (r.agent === null) return "–";
  return (
    <>
      {r.agent.name} <span class="agent-kind">{r.agent.kind}</span>
    </>
  );
}

function RunLine({ r, now, onCancelled }: { r: ListRow; now: number; onCancelled: () => void }) {
  const waiting = r.waiting > 0 && r.state === "live";
  return (
    <tr data-run-id={r.runId} class={waiting ? "waiting" : undefined}>
      <th scope="row">
        <a href={runHref(r.runId)}>{r.runId}</a>
        {r.prompt !== null && <span class="run-prompt">{r.prompt}</span>}
      </th>
      <td data-label="State">
        <span class={`state state-${r.state}`} data-testid="run-state">
          {r.state}
        </span>
        {waiting && (
          <span class="waiting-badge" data-testid="waiting-badge">
            Waiting for you ({r.waiting})
          </span>
        )}
        {r.note !== null && <span class="state-note"> {r.note}</span>}
      </td>
      <td data-label="Agent">{agentCell(r)}</td>
      <td data-label="Created">
        <Ago iso={r.createdAt} now={now} />
      </td>
      <td data-label="Duration">{duration(r.durationMs)}</td>
      <td data-label="Events" class="event-count">
        {r.eventCount}
      </td>
      <td data-label="Result">{r.disposition ?? "–"}</td>
      <td data-label="Actions">{r.state === "queued" && <CancelQueued runId={r.runId} onCancelled={onCancelled} />}</td>
    </tr>
  );
}

/**
 * The runs, newest first, a page at a time, narrowed by state, label, agent and text, and read
 * again every RUNS_EVERY_MS while open. A run waiting for a person's answer is marked.
 */
export function RunsList() {
  usePageTitle("Runs");
  const [filter, setFilter] = useState<RunFilter>(NO_FILTER);
  // The `after` cursor of each page before this one, and of this one (undefined: the first).
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined]);
  const [page, setPage] = useState<{ rows: ListRow[]; next: string | null } | null>(null);
  const [refused, setRefused] = useState<string | null>(null);
  const [filterRefused, setFilterRefused] = useState<ApiRefusal | null>(null);
  const now = useNow(true);
  const after = cursors.at(-1);
  const applied: RunFilter = labelPair(filter.label) === null ? { ...filter, label: "" } : filter;
  const refresh = usePoll(
    async (current) => {
      const answer = await fetchRunPage(applied, after, RUNS_PAGE);
      if (!current()) return false;
      if (answer.ok) {
        setPage(answer.value);
        setFilterRefused(null);
        return true;
      }
      // A filter the API refuses (400) waits for another filter; a refused token is said for the whole page.
      if (answer.status === 400) return (setFilterRefused(answer.error), false);
      if (answer.status >= 400 && answer.status < 500)
        return (setRefused(`${answer.status} ${answer.error.code}: ${answer.error.message}`), false);
      return true;
    },
    RUNS_EVERY_MS,
    [JSON.stringify(applied), after],
  );
  if (refused !== null)
    return (
      <p role="alert" class="refusal" data-testid="runs-refused">
        The console refused to list the runs: {refused}
      </p>
    );
  const filtered = JSON.stringify(filter) !== JSON.stringify(NO_FILTER);
  const changeFilter = (f: RunFilter) => {
    setFilter(f);
    setCursors([undefined]);
  };
  return (
    <>
      <h1>Runs</h1>
      <Filters filter={filter} onChange={changeFilter} />
      {filterRefused && (
        <p role="alert" class="refusal" data-testid="filter-refused">
          The filter was refused: <code>{filterRefused.code}</code>: {filterRefused.message}
        </p>
      )}
      {page === null ? (
        <p role="status">Loading runs…</p>
      ) : page.rows.length === 0 && cursors.length === 1 ? (
        <p role="status">
          {filtered ? "No run matches these filters." : "No runs yet. They appear here as soon as they start."}
        </p>
      ) : (
        <table class="runs" data-testid="runs-table">
          <caption>
            Runs ({page.rows.length}
            {cursors.length > 1 || page.next !== null ? ` on page ${cursors.length}` : ""}), updating live
          </caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">State</th>
              <th scope="col">Agent</th>
              <th scope="col">Created</th>
              <th scope="col">Duration</th>
              <th scope="col">Events</th>
              <th scope="col">Result</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {page.rows.map((r) => (
              <RunLine key={r.runId} r={r} now={now} onCancelled={refresh} />
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages of runs">
        <button
          type="button"
          data-testid="runs-prev"
          disabled={cursors.length === 1}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Newer runs
        </button>
        <button
          type="button"
          data-testid="runs-next"
          disabled={page?.next == null}
          onClick={() => page?.next && setCursors([...cursors, page.next])}
        >
          Older runs
        </button>
      </nav>
    </>
  );
}
