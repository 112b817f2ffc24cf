/**
 * PrpClient: the HTTP API v1 from a program, typed by the API's schemas
 * (contract/api/generated/types.ts). Plain fetch, so it runs in Node 20 and in a browser;
 * every refusal is a PrpApiError carrying the API's `{code, message, path?}` and the status.
 */
import type {
  AgentList,
  CommandReceipt,
  CommandRequest,
  CommittedEvent,
  EventPage,
  Run,
  RunList,
  RunSpec,
  RunState,
  RunSummary,
  Ticket,
  TicketRequest,
  WorkerList,
  WorkerPoll,
  WorkerPollAnswer,
} from "../contract/api/generated/types.js";
import { CLIENT_ERROR_CODES, errorFromResponse, PrpApiError } from "./errors.js";
import { followEvents, type FollowOptions } from "./follow.js";

export interface PrpClientOptions {
  /** The API's origin (and any path prefix before /v1), e.g. `http://127.0.0.1:7400`. */
  baseUrl: string;
  /** An API token (`prp authority token create`); sent as `Authorization: Bearer <token>`. */
  token: string;
  /** The fetch to use; the global one by default. */
  fetch?: typeof fetch;
}

export interface RunQuery {
  state?: RunState;
  /** Runs that carry every one of these labels. */
  labels?: Record<string, string>;
  /** Runs whose id or spec contains this text. */
  text?: string;
  /** The `next` cursor of the previous page. */
  after?: string;
  /** At most this many runs on a page. */
  limit?: number;
}

export interface IdempotencyOptions {
  /** Makes a retry return what the first request created instead of creating it again. */
  idempotencyKey?: string;
}

type Query = Record<string, string | number | string[] | undefined>;

export class PrpClient {
  readonly #baseUrl: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;

  constructor(options: PrpClientOptions) {
    if (!/^https?:\/\//.test(options.baseUrl))
      throw new TypeError(`baseUrl must be an http(s) URL: ${options.baseUrl}`);
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** POST /v1/runs: creates a run (201), or with a repeated idempotency key returns the one it created (200). */
  createRun(spec: RunSpec, options: IdempotencyOptions = {}): Promise<Run> {
    return this.#json("POST", "/v1/runs", { body: spec, idempotencyKey: options.idempotencyKey });
  }

  /** GET /v1/runs: one page of runs. */
  listRuns(query: RunQuery = {}): Promise<RunList> {
    return this.#json("GET", "/v1/runs", { query: runQuery(query) });
  }

  /** Every run the query matches, page after page until `next` is null. */
  async *allRuns(query: RunQuery = {}): AsyncGenerator<RunSummary> {
    let after = query.after;
    for (;;) {
      const page = await this.listRuns({ ...query, after });
      yield* page.runs;
      if (page.next === null) return;
      if (page.next === after) {
        throw new PrpApiError(200, CLIENT_ERROR_CODES.badResponse, `the run list repeated the cursor ${after}`);
      }
      after = page.next;
    }
  }

  /** GET /v1/runs/{runId}; with `upto`, its session, requests and failure as of its first `upto` events. */
  getRun(runId: string, options: { upto?: number } = {}): Promise<Run> {
    return this.#json("GET", runPath(runId), { query: { upto: options.upto } });
  }

  /**
   * GET /v1/runs/{runId}/events: one page of committed events after `after`; with `type` or `q`,
   * the matching ones of a bounded scan (continue from `next`).
   */
  events(
    runId: string,
    options: { after?: number; limit?: number; type?: string[]; q?: string } = {},
  ): Promise<EventPage> {
    const { after, limit, type, q } = options;
    return this.#json("GET", `${runPath(runId)}/events`, {
      query: { after, limit, type: type?.length ? type : undefined, q: q || undefined },
    });
  }

  /**
   * The run's committed events as they are committed, over SSE, until the run's end: resumes
   * a cut connection from the last seq received, and checks that no seq comes twice, out of
   * order or after a gap (follow.ts). An abort through `signal` ends it without an error.
   */
  follow(runId: string, options: FollowOptions = {}): AsyncIterable<CommittedEvent> {
    const path = `${runPath(runId)}/events`;
    return followEvents(
      (lastSeq, first, signal) =>
        this.#fetch(this.#url(path, first && lastSeq > 0 ? { after: lastSeq } : {}), {
          method: "GET",
          headers: {
            ...this.#headers(),
            accept: "text/event-stream",
            ...(!first && lastSeq > 0 ? { "last-event-id": String(lastSeq) } : {}),
          },
          signal,
        }),
      options,
    );
  }

  /** POST /v1/runs/{runId}/commands: queues a command (201), or returns the one a repeated key queued (200). */
  sendCommand(runId: string, request: CommandRequest, options: IdempotencyOptions = {}): Promise<CommandReceipt> {
    return this.#json("POST", `${runPath(runId)}/commands`, { body: request, idempotencyKey: options.idempotencyKey });
  }

  /** POST /v1/runs/{runId}/tickets (admin scope): a one-use bootstrap ticket for a runner. */
  createTicket(runId: string, request: TicketRequest = {}): Promise<Ticket> {
    return this.#json("POST", `${runPath(runId)}/tickets`, { body: request });
  }

  /** POST /v1/runs/{runId}/cancel: cancels a queued run, or sends run.cancel to one under way. */
  cancelRun(runId: string): Promise<Run> {
    return this.#json("POST", `${runPath(runId)}/cancel`);
  }

  /**
   * POST /v1/workers/poll, with a worker credential as the token: reports the worker's runners
   * and claims runs for it. A long poll (`waitMs`) can be ended through `signal`; resend the
   * same body (the same requestId) to get the same claims.
   */
  pollWorker(body: WorkerPoll, options: { signal?: AbortSignal } = {}): Promise<WorkerPollAnswer> {
    return this.#json("POST", "/v1/workers/poll", { body, ...(options.signal ? { signal: options.signal } : {}) });
  }

  /** GET /v1/workers: every worker, its health and active runs, and the admission caps. */
  listWorkers(): Promise<WorkerList> {
    return this.#json("GET", "/v1/workers");
  }

  /** GET /v1/agents: the named agents and the fake harness's scripts a run may name. */
  listAgents(): Promise<AgentList> {
    return this.#json("GET", "/v1/agents");
  }

  #headers(): Record<string, string> {
    return { authorization: `Bearer ${this.#token}` };
  }

  #url(path: string, query: Query = {}): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined) continue;
      for (const item of Array.isArray(value) ? value : [value]) params.append(key, String(item));
    }
    const search = params.toString();
    return `${this.#baseUrl}${path}${search ? `?${search}` : ""}`;
  }

  async #json<T>(
    method: "GET" | "POST",
    path: string,
    request: { body?: unknown; query?: Query; idempotencyKey?: string | undefined; signal?: AbortSignal } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { ...this.#headers(), accept: "application/json" };
    if (request.body !== undefined) headers["content-type"] = "application/json";
    if (request.idempotencyKey !== undefined) headers["idempotency-key"] = request.idempotencyKey;
    let response: Response;
    try {
      response = await this.#fetch(this.#url(path, request.query), {
        method,
        headers,
        ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
        ...(request.signal ? { signal: request.signal } : {}),
      });
    } catch (cause) {
      throw new PrpApiError(0, CLIENT_ERROR_CODES.network, `cannot reach the API: ${String(cause)}`, undefined, {
        cause,
      });
    }
    if (!response.ok) throw await errorFromResponse(response);
    const text = await response.text();
    try {
      return JSON.parse(text) as T;
    } catch (cause) {
      throw new PrpApiError(
        response.status,
        CLIENT_ERROR_CODES.badResponse,
        `${method} ${path} answered ${response.status} with a body that is not JSON`,
        undefined,
        { cause },
      );
    }
  }
}

const runPath = (runId: string): string => `/v1/runs/${encodeURIComponent(runId)}`;

function runQuery(query: RunQuery): Query {
  return {
    state: query.state,
    label: query.labels ? Object.entries(query.labels).map(([key, value]) => `${key}:${value}`) : undefined,
    text: query.text,
    after: query.after,
    limit: query.limit,
  };
}
