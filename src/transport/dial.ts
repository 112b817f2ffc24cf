import type { LookupFunction } from "node:net";
import { isIP } from "node:net";
import { rootCertificates } from "node:tls";
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
  /** wss:// only: the certificates trusted besides Node's root store (`--ca-bundle-path`, PEM). */
  caBundle?: string;
}

/**
 * OpenSSL's verdicts on a certificate chain, as Node names them: the authority is not who the
 * URL names, or nobody this runner trusts vouches for it. Dialling again cannot change that.
 */
const UNTRUSTED =
  /^(ERR_TLS_CERT_ALTNAME_INVALID|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_[A-Z_]+|INVALID_CA|PATH_LENGTH_EXCEEDED|INVALID_PURPOSE|HOSTNAME_MISMATCH|IP_ADDRESS_MISMATCH)$/;

/** What a wss:// dial trusts: Node's root store plus the bundle (`ca` replaces the store, so both are given). */
const trustOf = (endpoint: ResolvedEndpoint, caBundle: string | undefined) =>
  endpoint.scheme === "wss" && caBundle !== undefined ? { ca: [...rootCertificates, caBundle] } : {};

/** A lookup that answers with one pinned address, so the socket goes where the resolver decided. */
function pinnedLookup(address: string): LookupFunction {
  const family = isIP(address);
  return (_host, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

function attempt(
  endpoint: ResolvedEndpoint,
  address: string,
  timeoutMs: number,
  options: DialOptions,
): Promise<Result<WebSocket>> {
  return new Promise((resolve) => {
    const ws = new WebSocket(endpoint.url, {
      lookup: pinnedLookup(address),
      handshakeTimeout: timeoutMs,
      maxPayload: maxSecureFrameBytes(options.maxFrameBytes ?? MAX_FRAME_BYTES),
      ...trustOf(endpoint, options.caBundle),
      rejectUnauthorized: true,
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
      const code = (err as NodeJS.ErrnoException).code ?? "";
      if (UNTRUSTED.test(code))
        settle(
          fail(
            "tls_untrusted",
            "",
            `${endpoint.host}:${endpoint.port}: the authority's certificate is not trusted (${code}: ${err.message}); trust comes from Node's root store and --ca-bundle-path`,
          ),
        );
      else settle(fail("connect_failed", "", `${address}:${endpoint.port}: ${err.message}`));
    });
  });
}

/**
 * Opens the WebSocket to the first pinned address that answers, in their sorted order: at most
 * 3 s per attempt and 10 s in all (§5.1). Every failure is named in the one refusal. A wss://
 * certificate that does not verify ends the dial at once with `tls_untrusted`.
 */
export async function dial(endpoint: ResolvedEndpoint, options: DialOptions = {}): Promise<Result<WebSocket>> {
  const deadline = Date.now() + (options.totalMs ?? CONNECT_TOTAL_MS);
  const failures: string[] = [];
  for (const address of endpoint.addresses) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) break;
    const result = await attempt(
      endpoint,
      address,
      Math.min(options.attemptMs ?? CONNECT_ATTEMPT_MS, remaining),
      options,
    );
    if (result.ok || result.error.code === "tls_untrusted") return result;
    failures.push(result.error.message);
  }
  return fail(
    "connect_failed",
    "",
    failures.length > 0 ? failures.join("; ") : "the connect deadline passed before any attempt",
  );
}
