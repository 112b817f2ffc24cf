import cors from "@fastify/cors";
import rateLimit from "@fastify/rate-limit";
import Fastify, { type FastifyError, type FastifyInstance } from "fastify";
import { fail } from "../authority/errors.js";
import type { AuthorityStore } from "../authority/store.js";
import { openApiDocument } from "../contract/api/openapi.js";
import { isLoopback } from "../transport/loopback.js";
import { closeSilentSockets } from "./silent-sockets.js";
import { requireToken } from "./auth.js";
import { commandRoutes } from "./commands-routes.js";
import {
  QueueWake,
  type ApiContext,
  type ApiStore,
  type ApiWrites,
  type Authenticate,
  type AuthenticateWorker,
  type DispatchSettings,
} from "./context.js";
import { DEFAULT_DISPATCH, startSweeper } from "./dispatch-sweeper.js";
import { agentRoutes } from "./agents-routes.js";
import { cancelRoutes } from "./cancel-routes.js";
import { workerRoutes } from "./workers-routes.js";
import { authenticateWorker as authenticateWorkerCredential } from "./worker-credentials.js";
import { ApiError, sendError } from "./errors.js";
import { EventFeed } from "./event-feed.js";
import { eventRoutes } from "./events-routes.js";
import { jsonBodyOnly } from "./json-body.js";
import { DEFAULT_API_LIMITS, type ApiLimits } from "./limits.js";
import { FactsCache, SessionCache } from "./run-view.js";
import { authenticate as authenticateToken } from "./tokens.js";
import type { SnapshotOrigin } from "../reducer/snapshot.js";
import { runRoutes } from "./runs-routes.js";
import { HEALTH_PATHS, healthResponse, type HealthSource } from "../ops/health.js";
import { validationError, validatorCompiler } from "./validation.js";

export interface ApiServerOptions {
  store: AuthorityStore;
  host: string;
  port: number;
  /** PEM certificate chain and key: serve https, on any address. Without it, loopback only. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** The one browser origin allowed to call the API; CORS stays closed without it. */
  corsOrigin?: string;
  limits?: Partial<ApiLimits>;
  /** The authority's runner base URL (ws:// or wss://), for the tickets' connect URL. */
  runnerConnectUrl: string;
  now?: () => number;
  /** Told when a command is queued, so that an authority in this process delivers it at once. */
  commandQueued?: (runId: string) => void;
  /** A worker's poll claimed a run that had waited `waitedMs` since it was queued (the queue-wait metric). */
  runClaimed?: (waitedMs: number) => void;
  /** A failure nobody awaits (a stream's read): reported, the server goes on. */
  onError?: (err: Error) => void;
  /** The run queue's timing; give every instance on one store the same. */
  dispatch?: Partial<DispatchSettings>;
  /** Serve /healthz, /readyz and /metrics from this, without a token (src/ops/health.ts). */
  health?: HealthSource;
}

export interface ApiServerHandle {
  /** http(s)://HOST:PORT, the bound port. */
  url: string;
  /** Wakes the streams of `runId` at once: the authority committed an event to it. */
  committed(runId: string): void;
  close(): Promise<void>;
}

/** The /v1 routes on a Fastify app of someone else's (the console's), or on the API's own server. */
export interface ApiRoutesOptions {
  store: ApiStore;
  /** Where creates, commands and tickets go; `{refused}` refuses each of them with that error. */
  writes: ApiWrites;
  limits?: Partial<ApiLimits>;
  runnerConnectUrl: string;
  corsOrigin?: string;
  /** How a bearer token is checked; by default against the store's API tokens (tokens.ts). */
  authenticate?: Authenticate;
  /** How a worker's credential is checked; by default against the store's workers. */
  authenticateWorker?: AuthenticateWorker;
  dispatch?: Partial<DispatchSettings>;
  /** Each token's rate limit (limits.rateMax per rateWindowMs); on by default. */
  rateLimit?: boolean;
  /** What a run's reduced session starts from (a replayed fixture's identity), else nothing. */
  sessionOrigin?: (runId: string) => SnapshotOrigin;
  now?: () => number;
  commandQueued?: (runId: string) => void;
  /** A worker's poll claimed a run that had waited `waitedMs` since it was queued (the queue-wait metric). */
  runClaimed?: (waitedMs: number) => void;
  onError?: (err: Error) => void;
}

export interface ApiRoutes {
  /** Wakes the streams of `runId` at once: an event was committed to it. */
  committed(runId: string): void;
  /** Followers of event streams now, over every run. */
  followerCount(): number;
  /** Wakes the workers' held polls (a run was queued or a slot freed elsewhere in this process). */
  queueChanged(): void;
  /** Ends every event stream (a client resumes by Last-Event-ID) and stops reading: before the app closes. */
  close(): void;
}

/**
 * Registers the public HTTP API v1 under /v1 on `app`, encapsulated: its validation, body
 * parser, error and not-found handlers, token check and rate limit apply to its routes only.
 */
export async function registerApi(app: FastifyInstance, options: ApiRoutesOptions): Promise<ApiRoutes> {
  const limits: ApiLimits = { ...DEFAULT_API_LIMITS, ...options.limits };
  const now = options.now ?? Date.now;
  const onError = options.onError ?? (() => {});
  const feed = new EventFeed({
    store: options.store,
    pollMs: limits.feedPollMs,
    maxBufferedBytes: limits.followerBufferBytes,
    keepAliveMs: limits.keepAliveCommentMs,
    onError,
  });
  const ctx: ApiContext = {
    store: options.store,
    writes: options.writes,
    feed,
    sessions: new SessionCache(options.store, undefined, options.sessionOrigin),
    facts: new FactsCache(options.store),
    limits,
    runnerConnectUrl: options.runnerConnectUrl.replace(/\/+$/, ""),
    now,
    commandQueued: options.commandQueued ?? (() => {}),
    runClaimed: options.runClaimed ?? (() => {}),
    dispatch: { ...DEFAULT_DISPATCH, ...options.dispatch },
    queue: new QueueWake(),
  };
  const authenticate: Authenticate =
    options.authenticate ?? ((authorization, nowMs) => authenticateToken(options.store, authorization, nowMs));
  const writes = options.writes;
  const authenticateWorker: AuthenticateWorker =
    options.authenticateWorker ??
    ("refused" in writes
      ? async () => fail("token_invalid", "", `${writes.refused.message}: it serves no workers`)
      : (authorization) => authenticateWorkerCredential(writes.store, authorization));
  await app.register(
    async (api) => {
      await apiPlugin(api, ctx, { ...options, authenticate, authenticateWorker, onError });
    },
    { prefix: "/v1" },
  );
  return {
    committed: (runId) => feed.wake(runId),
    followerCount: () => feed.followerCount(),
    queueChanged: () => ctx.queue.wake(),
    close: () => feed.close(),
  };
}

/**
 * The public HTTP API v1 (docs/api.md): Fastify for routing, validation through our Ajv and the
 * API's JSON Schemas, and raw-socket streaming of event streams. No cookies, nothing cached.
 */
export const ApiServer = {
  async start(options: ApiServerOptions): Promise<ApiServerHandle> {
    if (!options.tls && !isLoopback(options.host))
      throw new Error(`the API listens on a loopback address without TLS, not ${options.host}`);
    const limits: ApiLimits = { ...DEFAULT_API_LIMITS, ...options.limits };
    const app = Fastify({
      ...(options.tls ? { https: { cert: options.tls.cert, key: options.tls.key } } : {}),
      bodyLimit: limits.bodyLimit,
      // A socket that sends nothing is closed too (an event stream lifts this for itself).
      connectionTimeout: limits.requestTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      return503OnClosing: true,
      logger: false,
    }) as unknown as FastifyInstance;
    app.server.headersTimeout = limits.headersTimeoutMs;
    app.server.maxConnections = limits.maxConnections;
    closeSilentSockets(app.server, limits.requestTimeoutMs);
    app.setNotFoundHandler((request, reply) =>
      sendError(reply, { code: "not_found", message: `no route ${request.method} ${request.url.split("?")[0]}` }),
    );
    const health = options.health;
    // Outside /v1 and its token check: they carry no run data (docs/deployment.md).
    if (health)
      for (const path of HEALTH_PATHS)
        app.get(path, async (_request, reply) => {
          const r = (await healthResponse(path, health))!;
          return reply
            .code(r.status)
            .header("content-type", r.contentType)
            .header("cache-control", "no-store")
            .send(r.body);
        });
    let routes: ApiRoutes | undefined;
    try {
      routes = await registerApi(app, {
        store: options.store,
        writes: { store: options.store },
        limits,
        runnerConnectUrl: options.runnerConnectUrl,
        ...(options.corsOrigin !== undefined ? { corsOrigin: options.corsOrigin } : {}),
        ...(options.now ? { now: options.now } : {}),
        ...(options.commandQueued ? { commandQueued: options.commandQueued } : {}),
        ...(options.runClaimed ? { runClaimed: options.runClaimed } : {}),
        ...(options.onError ? { onError: options.onError } : {}),
        ...(options.dispatch ? { dispatch: options.dispatch } : {}),
      });
      await app.listen({ host: options.host, port: options.port });
    } catch (err) {
      routes?.close();
      await app.close();
      throw err;
    }
    const address = app.server.address();
    if (address === null || typeof address === "string") throw new Error("the API server has no TCP address");
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
    const api = routes;
    const sweeper = startSweeper({
      store: options.store,
      settings: { ...DEFAULT_DISPATCH, ...options.dispatch },
      now: options.now ?? Date.now,
      changed: () => api.queueChanged(),
      onError: options.onError ?? (() => {}),
    });
    return {
      url: `${options.tls ? "https" : "http"}://${host}:${address.port}`,
      committed: (runId) => api.committed(runId),
      close: async () => {
        sweeper.stop();
        // The streams first: app.close waits for open connections, and a stream never ends by itself.
        api.close();
        await app.close();
      },
    };
  },
};

async function apiPlugin(
  app: FastifyInstance,
  ctx: ApiContext,
  options: ApiRoutesOptions & {
    authenticate: Authenticate;
    authenticateWorker: AuthenticateWorker;
    onError: (err: Error) => void;
  },
): Promise<void> {
  const { limits } = ctx;
  app.decorateRequest("apiToken", null);
  app.decorateRequest("worker", null);
  app.setValidatorCompiler(validatorCompiler());
  jsonBodyOnly(app, limits.bodyLimit);

  app.setErrorHandler((err: FastifyError & { validation?: unknown }, _request, reply) => {
    if (err instanceof ApiError) return sendError(reply, err);
    if (Array.isArray(err.validation))
      return sendError(reply, validationError(err.validation, err.validationContext ?? "body"));
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE")
      return sendError(reply, {
        code: "body_too_large",
        message: `a request body may have at most ${limits.bodyLimit} bytes`,
      });
    if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE" || err.code === "FST_ERR_CTP_INVALID_CONTENT_LENGTH")
      return sendError(reply, { code: "unsupported_media_type", message: "send the body as application/json" });
    if (err.code === "FST_ERR_CTP_EMPTY_JSON_BODY")
      return sendError(reply, { code: "invalid_json", message: "the body is empty; send a JSON object" });
    if (typeof err.statusCode === "number" && err.statusCode < 500)
      return sendError(reply, { code: "invalid_request", message: err.message });
    options.onError(err);
    return sendError(reply, { code: "internal_error", message: "the API failed to answer; try again" });
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, { code: "not_found", message: `no route ${request.method} ${request.url.split("?")[0]}` }),
  );

  // Nothing the API answers is for a cache, and nothing sets or reads a cookie.
  app.addHook("onSend", async (_request, reply) => {
    reply.header("cache-control", "no-store");
  });
  if (options.corsOrigin !== undefined)
    await app.register(cors, {
      origin: options.corsOrigin,
      methods: ["GET", "POST"],
      allowedHeaders: ["authorization", "content-type", "idempotency-key", "last-event-id"],
      credentials: false,
      maxAge: 600,
    });
  app.addHook("onRequest", requireToken(options.authenticate, options.authenticateWorker, ctx.now));
  if (options.rateLimit !== false)
    await app.register(rateLimit, {
      global: true,
      // After the token check: the limit is each token's, not each address's.
      hook: "preHandler",
      max: limits.rateMax,
      timeWindow: limits.rateWindowMs,
      keyGenerator: (request) => request.apiToken?.tokenId ?? request.worker?.workerId ?? `ip:${request.ip}`,
      errorResponseBuilder: (_request, context) =>
        new ApiError("rate_limited", `at most ${context.max} requests per ${context.after} per token; retry later`),
    });

  // Built once per server, not per request: it reads the contract's schema files.
  const document = JSON.stringify(openApiDocument());
  app.get("/openapi.json", async (_request, reply) => reply.type("application/json; charset=utf-8").send(document));
  runRoutes(app, ctx);
  eventRoutes(app, ctx);
  commandRoutes(app, ctx);
  cancelRoutes(app, ctx);
  workerRoutes(app, ctx);
  agentRoutes(app);
}
