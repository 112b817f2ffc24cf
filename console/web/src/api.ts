import { PrpClient } from "../../../src/client/client.js";
import { PrpApiError } from "../../../src/client/errors.js";
import type {
  AgentList,
  CommandReceipt,
  CommandRequest,
  RunSpec,
  RunState,
  RunSummary,
  Worker,
  WorkerList,
  Turn,
  FileChange,
} from "../../../src/contract/api/generated/types.js";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import type { FailureFacts, RequestDetail } from "../../../src/api/run-facts.js";
import type { ArtifactFile } from "../../../src/console/bundle-files.js";
import type { SessionItem, SessionRequest, SessionSnapshot } from "../../../src/reducer/snapshot.js";
import { authHeaders } from "./token.js";

/**
 * The page is a client of the public HTTP API v1 (docs/api.md), served by the console on the
 * page's own origin: the shipped client (src/client) with the console's token as the bearer
 * token. Only a run's bundle files, which are files on disk and not the API's, are read from the
 * console's /bundles/.
 */
export type { CommandReceipt, FailureFacts, FileChange, RequestDetail, RunSpec, Turn };

/** A refusal, as the API sends it: what was refused, where, and what to do. */
export interface ApiRefusal {
  code: string;
  path?: string | undefined;
  message: string;
}

/** One line of the runs list. */
export interface RunRow {
  runId: string;
  /**
   * `queued` or `claimed` while in the run queue, `live` until run.terminal is committed, then
   * the run's terminal state (succeeded, failed, …), or why its dispatch ended (cancelled, worker_lost).
   */
  state: string;
  /** Why a queued run waits ("cap agent=claude 4/4"), or who holds a claimed one; else null. */
  note: string | null;
  harness: string | null;
  startedAt: string | null;
  durationMs: number | null;
  eventCount: number;
  disposition: string | null;
}

/** One event of a run's timeline: its seq in the run's log. */
export interface TimelineEvent {
  position: number;
  event: PrpEvent;
}

/** A request as the session tracks it: asked, then resolved, expired or cancelled. */
export type SessionRequestView = SessionRequest;

/** An item of the run's session: the tail of its text only, and its full length. */
export type ViewItem = SessionItem & { textLength: number };
export type ViewSession = Omit<SessionSnapshot, "timeline" | "processedEventIds" | "items"> & { items: ViewItem[] };

/** What the run's page shows: the API's Run, its line, and its bundle's files. */
export interface RunView {
  run: RunRow;
  position: number;
  session: ViewSession;
  requests: RequestDetail[];
  failure: FailureFacts;
  commands: CommandReceipt[];
  artifacts: ArtifactFile[];
  /** False for a replayed file: there is nobody to send a command to. */
  live: boolean;
  /** Its turns in event order, each with its items' and requests' ids. */
  turns: Turn[];
  /** Its workspace diffs: by tool execution (itemId), or the turn's own (itemId null). */
  fileChanges: FileChange[];
  /** What was asked for the run (agent, prompt), for a run created through the API; else null. */
  spec: RunSpec | null;
  /** When its last event was emitted. */
  lastEventAt: string | null;
}

/** What an API call gives: the value, or the server's typed refusal. */
export type Answer<T> = { ok: true; value: T } | { ok: false; error: ApiRefusal; status: number };

/** Whether the console serves a replayed file (it says so in the page it serves). */
export const LIVE = document.querySelector('meta[name="prp-console-source"]')?.getAttribute("content") !== "replay";

const client = new PrpClient({
  baseUrl: location.origin,
  token: authHeaders().authorization?.replace(/^Bearer /, "") ?? "",
  fetch: (input, init) => fetch(input, { ...init, credentials: "omit", cache: "no-store" }),
});

async function answer<T>(call: () => Promise<T>): Promise<Answer<T>> {
  try {
    return { ok: true, value: await call() };
  } catch (err) {
    if (err instanceof PrpApiError)
      return { ok: false, status: err.status, error: { code: err.code, path: err.path, message: err.message } };
    return {
      ok: false,
      status: 0,
      error: { code: "unreachable", message: `the console does not answer: ${String(err)}` },
    };
  }
}

/** A run's line from the API's summary of it. */
export function runRow(s: RunSummary): RunRow {
  const first = s.startedAt === null ? NaN : Date.parse(s.startedAt);
  const last = s.lastEventAt === null ? NaN : Date.parse(s.lastEventAt);
  return {
    runId: s.runId,
    state:
      s.terminalState ??
      (s.state === "ended"
        ? (s.dispatch?.endReason ?? "ended")
        : s.state === "queued" || s.state === "claimed"
          ? s.state
          : "live"),
    note:
      s.state === "queued"
        ? (s.dispatch?.waiting ?? null)
        : s.state === "claimed"
          ? `by ${s.dispatch?.workerId ?? "hand"}`
          : null,
    harness: s.harness,
    startedAt: s.startedAt,
    durationMs: Number.isFinite(first) && Number.isFinite(last) ? Math.max(0, last - first) : null,
    eventCount: s.eventCount,
    disposition: s.disposition,
  };
}

const bundlePath = (runId: string) => `bundles/${encodeURIComponent(runId)}`;

async function artifacts(runId: string): Promise<ArtifactFile[]> {
  const res = await fetch(bundlePath(runId), { headers: authHeaders(), credentials: "omit", cache: "no-store" });
  return res.ok ? ((await res.json()) as { files: ArtifactFile[] }).files : [];
}

/** The run's page at event `upto` (default: every event so far), with its bundle's files. */
export const fetchView = (runId: string, upto?: number) =>
  answer(async (): Promise<RunView> => {
    const [run, files] = await Promise.all([
      client.getRun(runId, upto === undefined ? {} : { upto }),
      artifacts(runId).catch(() => []),
    ]);
    return {
      run: runRow(run.run),
      position: run.position,
      session: run.session as unknown as ViewSession,
      requests: run.requests as RequestDetail[],
      failure: run.failure as FailureFacts,
      commands: run.commands,
      artifacts: files,
      live: LIVE,
      turns: run.turns,
      fileChanges: run.fileChanges,
      spec: (run.run.spec as RunSpec | null) ?? null,
      lastEventAt: run.run.lastEventAt,
    };
  });

/** Which events a page of them holds: by range, and optionally by event type and text. */
export interface EventQuery {
  after: number;
  limit: number;
  types?: string[];
  q?: string;
}

/**
 * A page of the run's events; with types or q, the matches of a bounded scan, and `next` the
 * seq to continue after (the last one scanned).
 */
export const fetchEventPage = (runId: string, query: EventQuery) =>
  answer(async () => {
    const { after, limit, types, q } = query;
    const page = await client.events(runId, { after, limit, ...(types ? { type: types } : {}), ...(q ? { q } : {}) });
    return {
      events: page.events.map((e): TimelineEvent => ({ position: e.seq, event: e.event as unknown as PrpEvent })),
      next: page.next,
      ended: page.ended,
    };
  });

/** At most `limit` events after seq `after`: the timeline is read by range, never whole. */
export const fetchEvents = (runId: string, after: number, limit: number) => fetchEventPage(runId, { after, limit });

export const sendCommand = (runId: string, type: string, payload: Record<string, unknown>) =>
  answer(async () => ({
    receipt: await client.sendCommand(runId, { type: type as CommandRequest["type"], payload }),
  }));

/** The run's events as they are committed (SSE), from seq `after`. */
export const runEventsUrl = (runId: string, after: number) =>
  `v1/runs/${encodeURIComponent(runId)}/events?after=${after}`;
export const artifactUrl = (runId: string, name: string, open: boolean) =>
  `${bundlePath(runId)}/${name.split("/").map(encodeURIComponent).join("/")}${open ? "?open=1" : ""}`;

/**
 * A bundle file's link cannot carry the token (a link sends no header): a click on one is
 * fetched here with it, and the file shown in a new tab or saved, from a blob of this page.
 */
async function openArtifact(link: HTMLAnchorElement, tab: Window | null): Promise<void> {
  const res = await fetch(link.href, { headers: authHeaders(), credentials: "omit" });
  if (!res.ok) {
    const body = (await res.json().catch(() => ({}))) as Partial<ApiRefusal>;
    throw new Error(body.code ? `${body.code}: ${body.message}` : `the console answered ${res.status}`);
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
    !/^\/bundles\/[^/]+\//.test(new URL(link.href).pathname)
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

/** The runs list's filters, each the API's own (state=, label=, text=) but the agent (see fetchRunPage). */
export interface RunFilter {
  state: RunState | "";
  /** `key=value`. */
  label: string;
  agent: string;
  text: string;
}

/** What a run drives, for a person: the script, the profile, or the command's program; its kind beside it. */
export interface AgentName {
  kind: "script" | "profile" | "command" | "harness";
  name: string;
}

/** A line of the runs list: the run's line, with what a person knows it by. */
export interface ListRow extends RunRow {
  createdAt: string;
  /** The prompt's first line, at most PROMPT_CHARS characters; null without one. */
  prompt: string | null;
  agent: AgentName | null;
  /** Requests that wait for a person's answer. */
  waiting: number;
}

const PROMPT_CHARS = 120;
/** Programs that run another: the program a person knows is the script they are given. */
const INTERPRETERS = new Set(["node", "nodejs", "python", "python3", "npx", "bun", "deno", "uvx", "sh", "bash"]);

/** The command line's program: its first word's last path part, past an interpreter. */
export function commandProgram(command: string): string {
  const words = command.trim().split(/\s+/);
  const base = (word: string) =>
    word
      .replace(/^["']|["']$/g, "")
      .split(/[\\/]/)
      .at(-1) ?? word;
  const first = base(words[0] ?? command);
  const next = words.slice(1).find((w) => !w.startsWith("-"));
  return INTERPRETERS.has(first) && next !== undefined ? base(next) : first;
}

export function agentName(s: RunSummary): AgentName | null {
  const agent = s.spec?.agent;
  if (agent?.kind === "fake") return { kind: "script", name: agent.script };
  if (agent?.kind === "profile") return { kind: "profile", name: agent.profile };
  if (agent?.kind === "command") return { kind: "command", name: commandProgram(agent.command) };
  return s.harness === null ? null : { kind: "harness", name: commandProgram(s.harness) };
}

export function listRow(s: RunSummary): ListRow {
  const line = s.spec?.prompt?.split("\n", 1)[0]?.trim() ?? "";
  return {
    ...runRow(s),
    createdAt: s.createdAt,
    prompt: line === "" ? null : line.length > PROMPT_CHARS ? `${line.slice(0, PROMPT_CHARS)}…` : line,
    agent: agentName(s),
    waiting: s.pendingRequests,
  };
}

/** `key=value` as the API's label filter; null when it is not one. */
export function labelPair(text: string): Record<string, string> | null {
  const eq = text.indexOf("=");
  if (eq < 1) return null;
  return { [text.slice(0, eq).trim()]: text.slice(eq + 1).trim() };
}

/**
 * One page of runs, newest first, narrowed by `filter`. The API has no agent filter: the agent's
 * name is looked for in the spec by the API's text search (when no other text is asked), and each
 * row's agent is then checked here, so that a prompt that merely mentions the name is left out.
 */
export const fetchRunPage = (filter: RunFilter, after: string | undefined, limit: number) =>
  answer(async () => {
    const agent = filter.agent.trim().toLowerCase();
    const text = filter.text.trim() || agent;
    const labels = filter.label.trim() === "" ? undefined : (labelPair(filter.label) ?? undefined);
    const page = await client.listRuns({
      limit,
      ...(filter.state ? { state: filter.state } : {}),
      ...(labels ? { labels } : {}),
      ...(text ? { text } : {}),
      ...(after !== undefined ? { after } : {}),
    });
    const rows = page.runs.map(listRow);
    return {
      rows: agent === "" ? rows : rows.filter((r) => r.agent?.name.toLowerCase().includes(agent)),
      next: page.next,
    };
  });

/** How many runs under way wait for a person: what the tab's title counts. */
export const fetchWaitingCount = () =>
  answer(
    async () =>
      (await client.listRuns({ state: "running", limit: 500 })).runs.filter((r) => r.pendingRequests > 0).length,
  );

/** POST /v1/runs/ID/cancel: a queued run ends at once, a running one is sent run.cancel. */
export const cancelRun = (runId: string) => answer(async () => listRow((await client.cancelRun(runId)).run));

/** The agents a new run may name. */
export const fetchAgents = () => answer(() => client.listAgents());

/** POST /v1/runs; the same `idempotencyKey` again finds the run it created instead of a second one. */
export const createRun = (spec: RunSpec, idempotencyKey: string) =>
  answer(async () => (await client.createRun(spec, { idempotencyKey })).run.runId);

/** The workers and the admission caps. */
export const fetchWorkers = () => answer(() => client.listWorkers());

/** A queued run: its line, priority and time in the queue. */
export interface QueuedRow extends ListRow {
  priority: number;
  queuedAt: string;
}

/** The queued runs in the order workers claim them: higher priority first, then the longest waiting. */
export const fetchQueue = () =>
  answer(async () =>
    (await client.listRuns({ state: "queued", limit: 500 })).runs
      .map((s): QueuedRow => ({ ...listRow(s), priority: s.priority, queuedAt: s.dispatch?.queuedAt ?? s.createdAt }))
      .sort((a, b) => b.priority - a.priority || a.queuedAt.localeCompare(b.queuedAt)),
  );

export type { AgentList, RunState, Worker, WorkerList };
