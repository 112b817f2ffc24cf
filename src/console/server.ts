import { createReadStream } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { basename, join } from "node:path";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { ApiTokenRow } from "../authority/store.js";
import { fail, ok } from "../authority/errors.js";
import { registerApi, type ApiRoutes } from "../api/server.js";
import { closeSilentSockets } from "../api/silent-sockets.js";
import { packageRoot } from "../contract/package-root.js";
import { BundleFiles } from "./bundle-files.js";
import { checkRequestOrigin, secure } from "./http-guard.js";
import type { RunSource } from "./run-source.js";
import { serveStatic } from "./static-files.js";
import { newAccessToken, presentsToken } from "./token.js";

/** Where `npm run build` puts the page (console/web built by Vite). */
export const WEB_ROOT = join(packageRoot(), "dist", "console-web");

export interface ConsoleOptions {
  source: RunSource;
  host: string;
  port: number;
  /** How often the followed runs are read for new events. */
  pollMs?: number;
  /** DIR/<runId>/bundle/ holds a run's native execution bundle (prp demo's layout). */
  bundlesDir?: string;
  /** For tests; a fresh random token otherwise. */
  token?: string;
  onError?: (err: Error) => void;
  /** For tests; the defaults otherwise (CONSOLE_LIMITS). */
  limits?: Partial<ConsoleLimits>;
  /** Told when a command is queued, so that an authority in this process delivers it at once. */
  commandQueued?: (runId: string) => void;
}

/**
 * The console shares a process with the daemon, and so its file descriptors: a few silent
 * sockets must not hold them. A request has a short while to arrive; an idle keep-alive
 * socket is closed soon; the event streams, once their request is in, are not timed out.
 */
export interface ConsoleLimits {
  maxConnections: number;
  /** The whole request (headers and body) must arrive within this; a socket silent this long is closed (not an event stream's). */
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** How often sockets are checked against requestTimeoutMs. */
  checkIntervalMs: number;
}

export const CONSOLE_LIMITS: ConsoleLimits = {
  maxConnections: 64,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
};

/** The most bytes a command from the page may have. */
const MAX_BODY_BYTES = 64 * 1024;

/** The console's own token, as the API's routes see it: one person, who may watch and operate. */
const CONSOLE_TOKEN: ApiTokenRow = {
  tokenId: "console",
  digest: "",
  scope: "operate",
  label: "the console's access token",
  createdAtUnixMs: 0,
  expiresAtUnixMs: null,
  revokedAtUnixMs: null,
};

const MISSING_TOKEN =
  "this API needs the console's access token in Authorization: Bearer: open the URL that the console printed, or wrote to its --console-url-file (it ends in ?token=…)";
const WRONG_TOKEN = "wrong access token: open the URL that this console printed";

const refuse = (reply: FastifyReply, status: number, code: string, message: string) =>
  reply.code(status).header("content-type", "application/json; charset=utf-8").send({ code, message });

/**
 * The console: its page's files, a run's bundle files, and the public API v1 (src/api), whose
 * routes it serves itself over its own source, so that the page is a client of the public API
 * like any other. Fastify, on a node:http server with the console's own limits. Every /v1/ and
 * /bundles/ request must present the access token (`Authorization: Bearer`): 401 otherwise; the
 * API's routes take it as a token of scope `operate`. The page's files hold no data and are
 * served to anyone who reaches the port; the page reads the token from its URL's `?token=` once
 * (see console/web/src/token.ts).
 */
export class ConsoleServer {
  private constructor(
    private readonly app: FastifyInstance,
    private readonly routes: ApiRoutes,
    private readonly source: RunSource,
    /** The URL to open, with the token. */
    readonly url: string,
    readonly token: string,
  ) {}

  static async start(options: ConsoleOptions): Promise<ConsoleServer> {
    const token = options.token ?? newAccessToken();
    const bundles = options.bundlesDir === undefined ? undefined : new BundleFiles(options.bundlesDir);
    const onError = options.onError ?? ((err: Error) => process.stderr.write(`prp console: ${err.message}\n`));
    const limits = { ...CONSOLE_LIMITS, ...options.limits };
    const { source } = options;
    let server: Server | undefined;
    const app = Fastify({
      serverFactory: (handler) => {
        server = createServer(
          {
            requestTimeout: limits.requestTimeoutMs,
            headersTimeout: limits.requestTimeoutMs,
            keepAliveTimeout: limits.keepAliveTimeoutMs,
            connectionsCheckingInterval: limits.checkIntervalMs,
          },
          handler,
        );
        server.maxConnections = limits.maxConnections;
        // requestTimeout only runs once a request has begun: a socket that never sends a byte needs these.
        server.timeout = limits.requestTimeoutMs;
        closeSilentSockets(server, limits.requestTimeoutMs);
        return server;
      },
      connectionTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      bodyLimit: MAX_BODY_BYTES,
      forceCloseConnections: true,
      logger: false,
    }) as unknown as FastifyInstance;

    // Before anything else: the security headers on every answer, then the Host and Origin checks.
    app.addHook("onRequest", async (request, reply) => {
      secure(reply.raw);
      const refused = checkRequestOrigin(request.raw, options.host, (server!.address() as AddressInfo).port);
      if (refused) return refuse(reply, refused.status, refused.code, refused.message);
    });
    // Outside the API's routes no body is read: whatever is sent there is refused unparsed.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, _body, done) => done(null, undefined));
    const authenticate = async (authorization: string | undefined) => {
      const presented = presentsToken(authorization, token);
      if (presented === "ok") return ok(CONSOLE_TOKEN);
      return presented === "missing"
        ? fail("token_missing", "", MISSING_TOKEN)
        : fail("token_invalid", "", WRONG_TOKEN);
    };
    const routes = await registerApi(app, {
      store: source.store,
      writes: source.writes,
      limits: { bodyLimit: MAX_BODY_BYTES, ...(options.pollMs ? { feedPollMs: options.pollMs } : {}) },
      // The console starts no runner: a ticket's connect URL is not its to give.
      runnerConnectUrl: "ws://127.0.0.1:0",
      authenticate,
      // One person with one token; the connection cap bounds what a page can ask at once.
      rateLimit: false,
      sessionOrigin: (runId) => source.origin(runId),
      ...(options.commandQueued ? { commandQueued: options.commandQueued } : {}),
      onError,
    });

    const bundleToken = async (request: FastifyRequest, reply: FastifyReply) => {
      const checked = await authenticate(request.headers.authorization);
      if (!checked.ok) return refuse(reply, 401, checked.error.code, checked.error.message);
    };
    // A run's bundle: files on disk beside the store, not runs' data, and so not the API's.
    app.get<{ Params: { runId: string } }>("/bundles/:runId", { onRequest: bundleToken }, async (request) => ({
      files: bundles?.list(request.params.runId) ?? [],
    }));
    app.get<{ Params: { runId: string; "*": string }; Querystring: { open?: string } }>(
      "/bundles/:runId/*",
      { onRequest: bundleToken },
      async (request, reply) => {
        const { runId } = request.params;
        const name = request.params["*"];
        const file = bundles?.open(runId, name);
        if (!file) return refuse(reply, 404, "not_found", `run ${runId} has no bundle file ${name}`);
        const inline = request.query.open !== undefined;
        // A read that fails midway (a file truncated or replaced under it) ends this response, not the process.
        const body = createReadStream("", { fd: file.fd });
        body.on("error", (err) => {
          onError(new Error(`reading bundle file ${name} of run ${runId}: ${err.message}`));
          reply.raw.destroy();
        });
        return reply
          .header("content-type", inline ? "text/plain; charset=utf-8" : "application/octet-stream")
          .header(
            "content-disposition",
            `${inline ? "inline" : "attachment"}; filename="${basename(name).replace(/[^\w.-]/g, "_")}"`,
          )
          .header("content-length", file.bytes)
          .header("cache-control", "no-store")
          .send(body);
      },
    );
    // Anything else is the page's files (GET only); no other route, /api/ included, answers.
    const page = (html: Buffer) =>
      source.live ? html : Buffer.from(html.toString("utf8").replace('content="live"', 'content="replay"'));
    app.setNotFoundHandler((request, reply) => {
      if (request.method !== "GET" && request.method !== "HEAD") return void reply.code(405).send();
      const { pathname } = new URL(request.url, "http://console.invalid");
      try {
        decodeURIComponent(pathname);
      } catch {
        return void reply.code(404).send("not found");
      }
      reply.hijack();
      serveStatic(WEB_ROOT, pathname, reply.raw, page);
    });

    try {
      await app.listen({ host: options.host, port: options.port });
    } catch (err) {
      routes.close();
      await app.close();
      throw err;
    }
    const { port } = server!.address() as AddressInfo;
    const host = options.host.includes(":") ? `[${options.host}]` : options.host;
    return new ConsoleServer(app, routes, source, `http://${host}:${port}/?token=${token}`, token);
  }

  /** Wakes the event streams of `runId` at once: an authority in this process committed to it. */
  committed(runId: string): void {
    this.routes.committed(runId);
  }

  /** Ends every open stream, closes the listener and the source. */
  async close(): Promise<void> {
    this.routes.close();
    await this.app.close();
    await this.source.close();
  }
}
