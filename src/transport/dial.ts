import type { LookupFunction } from "node:net";
import { isIP } from "node:net";
import { WebSocket } from "ws";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import type { ResolvedEndpoint } from "./endpoint.js";
import { fail, ok, type Result } from "./errors.js";
import { CONNECT_ATTEMPT_MS, CONNECT_TOTAL_MS, MAX_UPGRADE_HEADER_BYTES } from "./limits.js";
import { maxSecureFrameBytes } from "./secure-frame.js";

export interface DialOptions {
  attemptMs?: number;
  totalMs?: number;
  maxFrameBytes?: number;
}

/** A lookup that answers with one pinned address, so the socket goes where the resolver decided. */
function pinnedLookup(address: string): LookupFunction {
  const family = isIP(address);
  return (_host, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

function attempt(endpoint: ResolvedEndpoint, address: string, timeoutMs: number, maxFrameBytes: number): Promise<Result<WebSocket>> {
  return new Promise((resolve) => {
    const ws = new WebSocket(endpoint.url, {
      lookup: pinnedLookup(address),
      handshakeTimeout: timeoutMs,
      maxPayload: maxSecureFrameBytes(maxFrameBytes),
      maxHeaderSize: MAX_UPGRADE_HEADER_BYTES,
      perMessageDeflate: false, // the server refuses any sec-websocket-extensions header
      followRedirects: false,
    });
    const settle = (result: Result<WebSocket>) => {
      ws.removeAllListeners("open");
      ws.removeAllListeners("error");
      resolve(result);
    };
    ws.once("open", () => {
      settle(ok(ws));
      // Until the channel's reader listens, an error must not crash the process; the 'close'
      // that always follows it reaches the reader.
      ws.on("error", () => {});
    });
    ws.once("error", (err) => {
      ws.terminate();
      settle(fail("connect_failed", "", `${address}:${endpoint.port}: ${err.message}`));
    });
  });
}

/**
 * Opens the WebSocket to the first pinned address that answers, in their sorted order: at most
 * 3 s per attempt and 10 s in all (§5.1). Every failure is named in the one refusal.
 */
export async function dial(endpoint: ResolvedEndpoint, options: DialOptions = {}): Promise<Result<WebSocket>> {
  const deadline = Date.now() + (options.totalMs ?? CONNECT_TOTAL_MS);
  const failures: string[] = [];
  for (const address of endpoint.addresses) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) break;
    const result = await attempt(endpoint, address, Math.min(options.attemptMs ?? CONNECT_ATTEMPT_MS, remaining), options.maxFrameBytes ?? MAX_FRAME_BYTES);
    if (result.ok) return result;
    failures.push(result.error.message);
  }
  return fail("connect_failed", "", failures.length > 0 ? failures.join("; ") : "the connect deadline passed before any attempt");
}
