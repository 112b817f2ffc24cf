import type { IncomingMessage, ServerResponse } from "node:http";
import { isIP } from "node:net";
import { isLoopback } from "../transport/loopback.js";

/**
 * What every response carries: the page loads only its own files and talks only to its own
 * origin, no other site may frame it (its buttons send commands), and no URL leaks onward.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

const WILDCARDS = new Set(["0.0.0.0", "::", ""]);

/** `name:port` or `[v6]:port` (port 80 when absent), lowercased; undefined when malformed. */
function parseHost(header: string): { name: string; port: number } | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(header.toLowerCase());
  if (!m) return undefined;
  return { name: m[1]!.replace(/^\[(.*)\]$/, "$1"), port: m[2] === undefined ? 80 : Number(m[2]) };
}

/**
 * Whether `Host` names this server: its own address, or loopback (an address, or localhost),
 * with its port. A page on some other name that resolves here (DNS rebinding) is refused, so it
 * cannot read the API as same-origin. On a wildcard address any IP literal is accepted: an IP
 * cannot be rebound.
 */
export function hostAllowed(header: string | undefined, listenHost: string, port: number): boolean {
  const host = header === undefined ? undefined : parseHost(header);
  if (!host || host.port !== port) return false;
  if (isLoopback(host.name, { localhost: true }) || host.name === listenHost.toLowerCase()) return true;
  return WILDCARDS.has(listenHost) && isIP(host.name) !== 0;
}

export interface Refusal {
  status: number;
  code: string;
  message: string;
}

/** The refusal of a request from the wrong `Host` or `Origin`, or none. */
export function checkRequestOrigin(req: IncomingMessage, listenHost: string, port: number): Refusal | undefined {
  if (!hostAllowed(req.headers.host, listenHost, port)) {
    const names = [...new Set([...(WILDCARDS.has(listenHost) ? [] : [listenHost]), "127.0.0.1", "localhost"])].join(
      ", ",
    );
    return {
      status: 421,
      code: "host_refused",
      message: `this console answers to ${names} (port ${port}), not to Host ${JSON.stringify(req.headers.host ?? "")}: open the URL it printed`,
    };
  }
  const origin = req.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== `http://${req.headers.host!.toLowerCase()}`) {
    return {
      status: 403,
      code: "origin_refused",
      message: `a request from ${origin} is refused: only the console's own page may call it`,
    };
  }
  return undefined;
}

/** Sets the security headers on a response before anything else is written. */
export function secure(res: ServerResponse): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
}
