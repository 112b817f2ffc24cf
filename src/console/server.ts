import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { packageRoot } from "../contract/package-root.js";
import { handleApi, refuse, sendJson } from "./api.js";
import { BundleFiles } from "./bundle-files.js";
import { LiveHub } from "./live-hub.js";
import { RunBook } from "./run-book.js";
import type { RunSource } from "./run-source.js";
import { serveStatic } from "./static-files.js";
import { checkRequestOrigin, secure } from "./http-guard.js";
import { newAccessToken, presentsToken } from "./token.js";

/** Where `npm run build` puts the page (console/web built by Vite). */
export const WEB_ROOT = join(packageRoot(), "dist", "console-web");

export interface ConsoleOptions {
  source: RunSource;
  host: string;
  port: number;
  /** How often the store is read for new events and command results. */
  pollMs?: number;
  /** DIR/<runId>/bundle/ holds a run's native execution bundle (prp demo's layout). */
  bundlesDir?: string;
  /** For tests; a fresh random token otherwise. */
  token?: string;
  onError?: (err: Error) => void;
  /** For tests; the defaults otherwise (CONSOLE_LIMITS). */
  limits?: Partial<ConsoleLimits>;
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

/**
 * The console: a plain node:http server, because it serves one page, a handful of JSON routes
 * and two event streams to one person; a framework would add more surface than it removes.
 * Every /api/ request must present the access token (`Authorization: Bearer`): 401 otherwise. The
 * page's files hold no data and are served to anyone who reaches the port; the page reads the
 * token from its URL's `?token=` once (see console/web/src/token.ts).
 */
export class ConsoleServer {
  private constructor(
    private readonly server: Server,
    private readonly hub: LiveHub,
    private readonly source: RunSource,
    /** The URL to open, with the token. */
    readonly url: string,
    readonly token: string,
  ) {}

  static async start(options: ConsoleOptions): Promise<ConsoleServer> {
    const token = options.token ?? newAccessToken();
    const bundles = options.bundlesDir === undefined ? undefined : new BundleFiles(options.bundlesDir);
    const book = new RunBook(options.source, bundles);
    const onError = options.onError ?? ((err: Error) => process.stderr.write(`prp console: ${err.message}\n`));
    const hub = new LiveHub(book, options.pollMs ?? 200, onError);
    await hub.refresh();
    const limits = { ...CONSOLE_LIMITS, ...options.limits };
    const server = createServer(
      {
        requestTimeout: limits.requestTimeoutMs,
        headersTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.keepAliveTimeoutMs,
        connectionsCheckingInterval: limits.checkIntervalMs,
      },
      (req, res) => {
        secure(res);
        handle(req, res).catch((err: Error) => {
          onError(err);
          if (!res.headersSent) refuse(res, { code: "console_failed", path: "", message: err.message });
          else res.end();
        });
      },
    );
    server.maxConnections = limits.maxConnections;
    // requestTimeout only runs once a request has begun: a socket that never sends a byte needs this.
    server.timeout = limits.requestTimeoutMs;
    const handle = async (req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? "/", "http://console.invalid");
      const refused = checkRequestOrigin(req, options.host, (server.address() as AddressInfo).port);
      if (refused)
        return sendJson(res, refused.status, { error: { code: refused.code, path: "", message: refused.message } });
      if (url.pathname.startsWith("/api/")) {
        const presented = presentsToken(req, token);
        if (presented !== "ok") {
          const message =
            presented === "missing"
              ? "this API needs the console's access token in Authorization: Bearer: open the URL that the console printed, or wrote to its --console-url-file (it ends in ?token=…)"
              : "wrong access token: open the URL that this console printed";
          return sendJson(res, 401, {
            error: { code: presented === "missing" ? "token_missing" : "token_wrong", path: "", message },
          });
        }
        return handleApi({ book, hub, bundles, onError }, req, res, url);
      }
      if (req.method !== "GET") return void res.writeHead(405).end();
      serveStatic(WEB_ROOT, url.pathname, res);
    };
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => resolve());
    });
    hub.start();
    const { port } = server.address() as AddressInfo;
    const host = options.host.includes(":") ? `[${options.host}]` : options.host;
    return new ConsoleServer(server, hub, options.source, `http://${host}:${port}/?token=${token}`, token);
  }

  /** Stops polling, ends every open stream, closes the listener and the source. */
  async close(): Promise<void> {
    await this.hub.stop();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
    await this.source.close();
  }
}
