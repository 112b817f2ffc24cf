import type { ApiRefusal, CommandReceipt, FailureFacts, RequestDetail, RunRow, RunView, TimelineEvent } from "../../../src/console/api-types.js";

export type { ApiRefusal, CommandReceipt, FailureFacts, RequestDetail, RunRow, RunView, TimelineEvent };

/** What an API call gives: the value, or the server's typed refusal. */
export type Answer<T> = { ok: true; value: T } | { ok: false; error: ApiRefusal };

async function call<T>(path: string, init?: RequestInit): Promise<Answer<T>> {
  let res: Response;
  try {
    res = await fetch(path, { credentials: "same-origin", ...init });
  } catch (err) {
    return { ok: false, error: { code: "unreachable", path: "", message: `the console server does not answer: ${(err as Error).message}` } };
  }
  const body = (await res.json().catch(() => ({}))) as { error?: ApiRefusal };
  if (!res.ok) return { ok: false, error: body.error ?? { code: `http_${res.status}`, path: "", message: res.statusText } };
  return { ok: true, value: body as T };
}

const runPath = (runId: string) => `api/runs/${encodeURIComponent(runId)}`;

export const fetchView = (runId: string, upto?: number) => call<RunView>(`${runPath(runId)}${upto === undefined ? "" : `?upto=${upto}`}`);
/** At most `limit` events after position `after`: the timeline is read by range, never whole. */
export const fetchEvents = (runId: string, after: number, limit: number) => call<{ events: TimelineEvent[] }>(`${runPath(runId)}/events?after=${after}&limit=${limit}`);
export const sendCommand = (runId: string, type: string, payload: Record<string, unknown>) =>
  call<{ receipt: CommandReceipt }>(`${runPath(runId)}/commands`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type, payload }) });
export const runStreamUrl = (runId: string, after: number) => `${runPath(runId)}/stream?after=${after}`;
export const artifactUrl = (runId: string, name: string, open: boolean) => `${runPath(runId)}/artifacts/${name.split("/").map(encodeURIComponent).join("/")}${open ? "?open=1" : ""}`;
export const RUNS_STREAM = "api/runs/stream";
