import { useState } from "preact/hooks";
import { fetchQueue, fetchWorkers, type ApiRefusal, type QueuedRow, type WorkerList } from "./api.js";
import { CancelQueued } from "./cancel-queued.js";
import { usePageTitle } from "./page-title.js";
import { Ago } from "./relative-time.js";
import { runHref } from "./route.js";
import { useNow } from "./use-now.js";
import { usePoll } from "./use-poll.js";
import "./workers-page.css";

/** How often the queue and the workers are read again. */
export const WORKERS_EVERY_MS = 3000;

const labelText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ") || "–";

function Workers({ list, now }: { list: WorkerList; now: number }) {
  if (list.workers.length === 0)
    return (
      <p role="status">
        No worker has been added: <code>prp authority worker add</code>, then <code>prp worker</code>.
      </p>
    );
  return (
    <table class="runs" data-testid="workers-table">
      <caption>Workers ({list.workers.length})</caption>
      <thead>
        <tr>
          <th scope="col">Worker</th>
          <th scope="col">Health</th>
          <th scope="col">Labels</th>
          <th scope="col">Agents</th>
          <th scope="col">Runs held</th>
          <th scope="col">Last seen</th>
        </tr>
      </thead>
      <tbody>
        {list.workers.map((w) => (
          <tr key={w.workerId} data-worker-id={w.workerId}>
            <th scope="row">
              {w.name}
              <span class="worker-id">{w.workerId}</span>
            </th>
            <td data-label="Health">
              <span class={`health health-${w.health}`}>{w.health.replace("_", " ")}</span>
              {w.draining && <span class="state-note"> draining</span>}
            </td>
            <td data-label="Labels">{labelText(w.labels)}</td>
            <td data-label="Agents">{w.agents.join(", ") || "–"}</td>
            <td data-label="Runs held">
              {w.activeRuns} of {w.maxRuns}
            </td>
            <td data-label="Last seen">
              <Ago iso={w.lastSeenAt} now={now} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Queue({ rows, now, onCancelled }: { rows: QueuedRow[]; now: number; onCancelled: () => void }) {
  if (rows.length === 0) return <p role="status">No run is queued.</p>;
  return (
    <table class="runs" data-testid="queue-table">
      <caption>Queued runs ({rows.length}), in the order workers claim them</caption>
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">Agent</th>
          <th scope="col">Priority</th>
          <th scope="col">Queued</th>
          <th scope="col">Why it waits</th>
          <th scope="col">
            <span class="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.runId} data-run-id={r.runId}>
            <th scope="row">
              <a href={runHref(r.runId)}>{r.runId}</a>
              {r.prompt !== null && <span class="run-prompt">{r.prompt}</span>}
            </th>
            <td data-label="Agent">{r.agent?.name ?? "–"}</td>
            <td data-label="Priority">{r.priority}</td>
            <td data-label="Queued">
              <Ago iso={r.queuedAt} now={now} />
            </td>
            <td data-label="Why it waits" data-testid="wait-reason">
              {r.note ?? "a worker can claim it now"}
            </td>
            <td data-label="Actions">
              <CancelQueued runId={r.runId} onCancelled={onCancelled} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Caps({ caps }: { caps: WorkerList["caps"] }) {
  if (caps.length === 0)
    return (
      <p role="status">
        No admission cap is set: <code>prp authority cap set</code>.
      </p>
    );
  return (
    <table class="runs" data-testid="caps-table">
      <caption>Admission caps</caption>
      <thead>
        <tr>
          <th scope="col">Scope</th>
          <th scope="col">In use</th>
        </tr>
      </thead>
      <tbody>
        {caps.map((c) => (
          <tr key={c.scope} data-cap={c.scope} class={c.active >= c.max ? "cap-full" : undefined}>
            <th scope="row">
              <code>{c.scope}</code>
            </th>
            <td data-label="In use">
              {c.active} of {c.max}
              {c.active >= c.max && <span class="state-note"> full: runs it covers wait</span>}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * The run queue and the workers that serve it, read again every WORKERS_EVERY_MS: each worker
 * (health, labels, agents, runs held, last seen), the queued runs with why each waits and a
 * cancel, and the admission caps with their use.
 */
export function WorkersPage() {
  usePageTitle("Queue and workers");
  const [workers, setWorkers] = useState<WorkerList | null>(null);
  const [queue, setQueue] = useState<QueuedRow[] | null>(null);
  const [refused, setRefused] = useState<ApiRefusal | null>(null);
  const now = useNow(true);
  const refresh = usePoll(
    async (current) => {
      const [w, q] = await Promise.all([fetchWorkers(), fetchQueue()]);
      if (!current()) return false;
      if (w.ok) setWorkers(w.value);
      if (q.ok) setQueue(q.value);
      const no = !w.ok ? w : !q.ok ? q : null;
      setRefused(no?.error ?? null);
      // A 4xx (a refused token) will be refused again: said, not asked for ever.
      return no === null || no.status === 0 || no.status >= 500;
    },
    WORKERS_EVERY_MS,
    [],
  );
  return (
    <>
      <h1>Queue and workers</h1>
      {refused && (
        <p role="alert" class="refusal">
          <code>{refused.code}</code>: {refused.message}
        </p>
      )}
      <section aria-labelledby="queue-title">
        <h2 id="queue-title">Queue</h2>
        {queue === null ? (
          <p role="status">Loading the queue…</p>
        ) : (
          <Queue rows={queue} now={now} onCancelled={refresh} />
        )}
      </section>
      <section aria-labelledby="workers-title">
        <h2 id="workers-title">Workers</h2>
        {workers === null ? <p role="status">Loading the workers…</p> : <Workers list={workers} now={now} />}
      </section>
      <section aria-labelledby="caps-title">
        <h2 id="caps-title">Admission caps</h2>
        {workers === null ? <p role="status">Loading the caps…</p> : <Caps caps={workers.caps} />}
      </section>
    </>
  );
}
