import { authHeaders } from "./token.js";
import type {
  ApiRefusal,
  CommandReceipt,
  FailureFacts,
  RequestDetail,
  RunRow,
  RunView,
  TimelineEvent,
} from "../../../src/console/api-types.js";

export type { ApiRefusal, CommandReceipt, FailureFacts, RequestDetail, RunRow, RunView, TimelineEvent };

/** What an API call gives: the value, or the server's typed refusal. */
export type Answer<T> = { ok: true; value: T } | { ok: false; error: ApiRefusal };

async function call<T>(path: string, init?: RequestInit): Promise<Answer<T>> {
  let res: Response;
  try {
    res = await fetch(path, {
      ...init,
      credentials: "omit",
      headers: { ...authHeaders(), ...(init?.headers as Record<string, string> | undefined) },
    });
  } catch (err) {
    return {
      ok: false,
      error: {
        code: "unreachable",
        path: "",
        message: `the console server does not answer: ${(err as Error).message}`,
      },
    };
  }
  const body = (await res.json().catch(() => ({}))) as { error?: ApiRefusal };
  if (!res.ok)
    return { ok: false, error: body.error ?? { code: `http_${res.status}`, path: "", message: res.statusText } };
  return { ok: true, value: body as T };
}

const runPath = (runId: string) => `api/runs/${encodeURIComponent(runId)}`;

export const fetchView = (runId: string, upto?: number) =>
  call<RunView>(`${runPath(runId)}${upto === undefined ? "" : `?upto=${upto}`}`);
/** At most `limit` events after position `after`: the timeline is read by range, never whole. */
export const fetchEvents = (runId: string, after: number, limit: number) =>
  call<{ events: TimelineEvent[] }>(`${runPath(runId)}/events?after=${after}&limit=${limit}`);
export const sendCommand = (runId: string, type: string, payload: Record<string, unknown>) =>
  call<{ receipt: CommandReceipt }>(`${runPath(runId)}/commands`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type, payload }),
  });
export const runStreamUrl = (runId: string, after: number) => `${runPath(runId)}/stream?after=${after}`;
export const artifactUrl = (runId: string, name: string, open: boolean) =>
  `${runPath(runId)}/artifacts/${name.split("/").map(encodeURIComponent).join("/")}${open ? "?open=1" : ""}`;
export const RUNS_STREAM = "api/runs/stream";

/**
 * A bundle file's link cannot carry the token (a link sends no header): a click on one is
 * fetched here with it, and the file shown in a new tab or saved, from a blob of this page.
 */
async function openArtifact(link: HTMLAnchorElement, tab: Window | null): Promise<void> {
  const res = await fetch(link.href, { headers: authHeaders(), credentials: "omit" });
  if (!res.ok) {
    const body = (await res.json().catch(() => ({}))) as { error?: ApiRefusal };
    throw new Error(body.error ? `${body.error.code}: ${body.error.message}` : `the console answered ${res.status}`);
  }
  const href = URL.createObjectURL(await res.blob());
  setTimeout(() => URL.revokeObjectURL(href), 60_000);
  if (tab !== null) return void (tab.location.href = href);
  const save = document.createElement("a");
  save.href = href;
  save.download = /filename="([^"]+)"/.exec(res.headers.get("content-disposition") ?? "")?.[1] ?? "artifact";
  save.click();
}

document.addEventListener("click", (e) => {
  const link = e.target instanceof Element ? e.target.closest<HTMLAnchorElement>("a[href]") : null;
  if (
    link === null ||
    new URL(link.href).origin !== location.origin ||
    !/\/api\/runs\/[^/]+\/artifacts\//.test(new URL(link.href).pathname)
  )
    return;
  e.preventDefault();
  // Opened now, in the click, or the browser blocks it as a pop-up; filled once fetched.
  const tab = link.hasAttribute("download") ? null : window.open("", "_blank");
  if (tab !== null) tab.opener = null;
  openArtifact(link, tab).catch((err: Error) => {
    if (tab !== null) tab.document.body.textContent = err.message;
    else window.alert(err.message);
  });
});
