import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import { IDENTITY_PATTERN } from "./envelope.js";
import { fail, ok, type Result, type TransportError, type TransportErrorCode } from "./errors.js";
import { AdmissionGate, type AdmissionCounts, type AdmissionOptions, type AdmissionRefusal } from "./admission.js";
import { HANDSHAKE_DEADLINE_MS, MAX_UPGRADE_HEADER_BYTES, UPGRADE_HEADERS_TIMEOUT_MS } from "./limits.js";
import { maxSecureFrameBytes } from "./secure-frame.js";

/** The server path of runtime.md §2.4 and §5.1: `/api/runner/v1/connect/<runId>`. */
export const RUNNER_CONNECT_PATH_PREFIX = "/api/runner/v1/connect/";

/**
 * What an upgrade request must be before the WebSocket handshake (§5.1, §5.4): no `Origin`
 * (a runner is never a browser, so any Origin means a page is trying to reach the authority),
 * no query, no extensions (no compression: frame sizes stay what the limits say), and the connect
 * path with a run id. ws itself checks the method, `Upgrade`, version 13 and the key.
 */
export function checkUpgradeRequest(req: IncomingMessage): Result<{ runId: string }> {
  if (req.headers.origin !== undefined)
    return fail("origin_refused", "", "an upgrade request with an Origin header is refused");
  const target = req.url ?? "";
  if (target.includes("?")) return fail("query_refused", "", "the connect path takes no query");
  if (req.headers["sec-websocket-extensions"] !== undefined)
    return fail("extensions_refused", "", "WebSocket extensions are refused");
  const runId = target.startsWith(RUNNER_CONNECT_PATH_PREFIX) ? target.slice(RUNNER_CONNECT_PATH_PREFIX.length) : "";
  if (!IDENTITY_PATTERN.test(runId))
    return fail("path_refused", "", `the path must be ${RUNNER_CONNECT_PATH_PREFIX}<runId>`);
  return ok({ runId });
}

const REFUSAL_STATUS: Partial<Record<TransportErrorCode, string>> = {
  origin_refused: "403 Forbidden",
  path_refused: "404 Not Found",
};

function refuse(socket: Duplex, error: TransportError): void {
  answer(socket, REFUSAL_STATUS[error.code] ?? "400 Bad Request");
}

function answer(socket: Duplex, status: string): void {
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  socket.destroy();
}

export interface RunnerUpgradeServerOptions {
  /**
   * A guarded, upgraded runner socket; the caller runs `acceptCoreChannel` on it at once, and
   * calls `authenticated` once the welcome is sent: until then the socket counts against the
   * admission caps and dies at the handshake deadline.
   */
  onRunner: (ws: WebSocket, runId: string, authenticated: () => void) => void;
  /** A refused upgrade, for the caller's diagnostics (with the request, to tell which run its path names). */
  onRefused?: (error: TransportError, req: IncomingMessage) => void;
  /** A socket refused at an admission cap (answered 429 or 503 and closed). */
  onOverCap?: (status: AdmissionRefusal, remoteAddress: string) => void;
  maxFrameBytes?: number;
  /** The whole upgrade request must arrive within this; Node answers 408 past it. */
  headersTimeoutMs?: number;
  admission?: AdmissionOptions;
  /** Serve TLS with this identity (wss://); without it, plaintext (ws://, loopback only). */
  tls?: TlsIdentity;
}

/** A TLS server identity: the certificate chain and its private key, PEM. */
export interface TlsIdentity {
  cert: string | Buffer;
  key: string | Buffer;
}

/** A TCP connection's key: its TLS socket (the upgrade's) and its raw socket (the gate's) share it. */
const connectionKey = (socket: Socket): string => `${socket.remoteAddress ?? ""}|${socket.remotePort ?? ""}`;

/** The HTTP server that takes runner upgrades, and the way to stop it with every socket closed. */
export interface RunnerUpgradeServer {
  readonly http: Server;
  listen(port: number, host: string): Promise<AddressInfo>;
  admission(): AdmissionCounts;
  close(): Promise<void>;
}

/**
 * An HTTP server (headers capped at 16 KiB: Node answers 431 past it; and timed: 408) whose
 * only job is runner upgrades, through a `ws` server in noServer mode. Every socket passes the
 * admission gate first. ws refuses unmasked client frames on its own; frames are capped at the
 * sealed size of a 1 MiB plaintext.
 */
export function createRunnerUpgradeServer(options: RunnerUpgradeServerOptions): RunnerUpgradeServer {
  const headersTimeout = options.headersTimeoutMs ?? UPGRADE_HEADERS_TIMEOUT_MS;
  const httpOptions = {
    maxHeaderSize: MAX_UPGRADE_HEADER_BYTES,
    headersTimeout,
    requestTimeout: headersTimeout,
    // Node checks the timeouts only this often (30 s by default): a fraction of the timeout keeps it a timeout.
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4))),
  };
  const upgradeOnly = (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(426, { connection: "close" }).end();
  };
  const deadlineMs = options.admission?.handshakeDeadlineMs ?? HANDSHAKE_DEADLINE_MS;
  const http: Server = options.tls
    ? createTlsServer(
        {
          ...httpOptions,
          cert: options.tls.cert,
          key: options.tls.key,
          minVersion: "TLSv1.2",
          handshakeTimeout: deadlineMs,
        },
        upgradeOnly,
      )
    : createServer(httpOptions, upgradeOnly);
  const gate = new AdmissionGate(options.admission);
  // Under TLS the gate holds the raw TCP socket and the upgrade sees its TLS socket: found again by their shared key.
  const raw = new Map<string, Socket>();
  http.on("connection", (socket: Socket) => {
    const refusal = gate.admit(socket);
    if (refusal === null) {
      if (options.tls) {
        const key = connectionKey(socket);
        raw.set(key, socket);
        socket.once("close", () => raw.delete(key));
      }
      return;
    }
    options.onOverCap?.(refusal, socket.remoteAddress ?? "");
    if (options.tls)
      socket.destroy(); // no TLS yet to answer in
    else answer(socket, refusal);
  });
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: maxSecureFrameBytes(options.maxFrameBytes ?? MAX_FRAME_BYTES),
    perMessageDeflate: false,
    clientTracking: true,
    // The authority beats; it never needs its peer's pings answered. Answering them would let a
    // peer that sends pings and reads nothing make this process buffer every pong.
    autoPong: false,
  });
  http.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const checked = checkUpgradeRequest(req);
    if (!checked.ok) {
      options.onRefused?.(checked.error, req);
      refuse(socket, checked.error);
      return;
    }
    const gated = options.tls ? raw.get(connectionKey(socket as Socket)) : (socket as Socket);
    wss.handleUpgrade(req, socket, head, (ws) =>
      options.onRunner(ws, checked.value.runId, () => gated && gate.authenticated(gated)),
    );
  });
  return {
    http,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        http.once("error", reject);
        http.listen(port, host, () => {
          http.off("error", reject);
          resolve(http.address() as AddressInfo);
        });
      }),
    admission: () => gate.counts(),
    close: () =>
      new Promise((resolve) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
