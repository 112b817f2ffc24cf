import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { fail, ok, type Result } from "./errors.js";
import { isLoopback } from "./loopback.js";

/** A connect URL that passed the rules of runtime.md §5.1. */
export interface Endpoint {
  url: string;
  scheme: "ws" | "wss";
  /** The host name or IP literal, without IPv6 brackets. */
  host: string;
  port: number;
  path: string;
}

/** An endpoint with its DNS answers pinned: reconnects use these, in this order, and never resolve again. */
export interface ResolvedEndpoint extends Endpoint {
  addresses: string[];
}

export interface LookupAddress {
  address: string;
  family: number;
}

/** DNS as the resolver needs it: every answer for a host. Tests pass a stub. */
export type LookupAll = (host: string) => Promise<LookupAddress[]>;

// Each of these could make two parsers (ours and the peer's, or a proxy's) disagree on which
// host, path or credentials a URL names: userinfo, percent-encoding, query, fragment, a
// backslash (which WHATWG treats as a slash), control characters and whitespace.
const FORBIDDEN: Array<[RegExp, string]> = [
  [/[\u0000-\u001f\u007f-\u009f]/, "a control character"],
  [/\s/, "whitespace"],
  [/\\/, "a backslash"],
  [/%/, "a percent sign"],
  [/\?/, "a query"],
  [/#/, "a fragment"],
  [/^[a-z]+:\/\/[^/]*@/i, "userinfo"],
];

export function parseConnectUrl(text: string): Result<Endpoint> {
  for (const [pattern, what] of FORBIDDEN) {
    if (pattern.test(text)) return fail("invalid_url", "", `the connect URL must not contain ${what}`);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail("invalid_url", "", "the connect URL does not parse");
  }
  if (url.protocol !== "ws:" && url.protocol !== "wss:")
    return fail("invalid_url", "", "the connect URL must be ws:// or wss://");
  if (url.username !== "" || url.password !== "")
    return fail("invalid_url", "", "the connect URL must not contain userinfo");
  if (url.hostname === "") return fail("invalid_url", "", "the connect URL has no host");
  if (url.port === "0") return fail("invalid_url", "", "the port must not be 0");
  const scheme = url.protocol === "ws:" ? "ws" : "wss";
  return ok({
    url: url.href,
    scheme,
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port === "" ? (scheme === "ws" ? 80 : 443) : Number(url.port),
    path: url.pathname,
  });
}

/** 4 or 16 bytes of an IP literal, for a numeric order. */
function addressBytes(address: string): number[] {
  if (isIP(address) === 4) return address.split(".").map(Number);
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const groups = (part: string | undefined) => (part ? part.split(":").map((g) => parseInt(g, 16)) : []);
  const left = groups(head);
  const right = groups(tail);
  const words = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

/** IPv4 before IPv6, then numerically: the order attempts are made in. */
export function sortAddresses(addresses: readonly string[]): string[] {
  const keyed = [...new Set(addresses)].map((a) => ({ a, bytes: addressBytes(a) }));
  keyed.sort((x, y) => x.bytes.length - y.bytes.length || compareBytes(x.bytes, y.bytes));
  return keyed.map((k) => k.a);
}

function compareBytes(x: number[], y: number[]): number {
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return 0;
}

const systemLookup: LookupAll = (host) => dnsLookup(host, { all: true, verbatim: true });

/**
 * Resolves once and pins the sorted answers (§5.1). `ws://` is refused unless every answer is
 * loopback: one public answer would let a DNS change move the plaintext upgrade off the host.
 */
export async function resolveEndpoint(
  endpoint: Endpoint,
  lookup: LookupAll = systemLookup,
): Promise<Result<ResolvedEndpoint>> {
  let answers: LookupAddress[];
  try {
    answers =
      isIP(endpoint.host) !== 0
        ? [{ address: endpoint.host, family: isIP(endpoint.host) }]
        : await lookup(endpoint.host);
  } catch (err) {
    return fail("dns_failed", "", `${endpoint.host} does not resolve: ${(err as Error).message}`);
  }
  const addresses = answers.map((answer) => answer.address);
  if (addresses.length === 0 || addresses.some((a) => isIP(a) === 0))
    return fail("dns_failed", "", `${endpoint.host} gave no usable address`);
  if (endpoint.scheme === "ws") {
    const outside = addresses.find((a) => !isLoopback(a));
    if (outside !== undefined)
      return fail(
        "non_loopback_address",
        "",
        `ws:// is allowed only to loopback, and ${endpoint.host} resolves to ${outside}`,
      );
  }
  return ok({ ...endpoint, addresses: sortAddresses(addresses) });
}
