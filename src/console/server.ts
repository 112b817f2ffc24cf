import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { packageRoot } from "../contract/package-root.js";
import { handleApi, refuse } from "./api.js";
import { BundleFiles } from "./bundle-files.js";
import { LiveHub } from "./live-hub.js";
import { RunBook } from "./run-book.js";
import type { RunSource } from "./run-source.js";
import { serveStatic } from "./static-files.js";
import { newAccessToken, presentsToken, tokenCookie } from "./token.js";

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
}

/**
 * The console: a plain node:http server, because it serves one page, a handful of JSON routes
 * and two event streams to one person; a framework would add more surface than it removes.
 * Every request must present the access token (in `?token=`, then in its cookie): 401 otherwise.
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
    const server = createServer((req, res) => {
      handle(req, res).catch((err: Error) => {
        onError(err);
        if (!res.headersSent) refuse(res, { code: "console_failed", path: "", message: err.message });
        else res.end();
      });
    });
    const handle = async (req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? "/", "http://console.invalid");
      const presented = presentsToken(req, url, token);
      if (!presented.ok) {
        res.writeHead(401, { "content-type": "text/plain; charset=utf-8" });
        return void res.end("401: this console needs its access token: open the URL that prp console printed (it ends in ?token=…)\n");
      }
      if (presented.fromQuery && req.method === "GET" && !url.pathname.startsWith("/api/")) {
        // Keep the token out of the address bar (and history): the cookie carries it from here on.
        res.writeHead(303, { "set-cookie": tokenCookie(token), location: url.pathname });
        return void res.end();
      }
      res.setHeader("set-cookie", tokenCookie(token));
      if (url.pathname.startsWith("/api/")) return handleApi({ book, hub, bundles }, req, res, url);
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
