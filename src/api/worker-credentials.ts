import { randomBytes } from "node:crypto";
import { sha256Digest } from "../contract/digest.js";
import { fail, ok, type Result } from "../authority/errors.js";
import type { DispatchPart, NewWorker, WorkerRow } from "../authority/store.js";
import { bearerOf, digestMatches } from "./tokens.js";

/**
 * `prp_wkr_<workerId>_<secret>`: a worker's credential, shaped like an API token but a kind of
 * its own, so that neither can stand in for the other: a worker may only poll, and a token never
 * claims runs. The store keeps the digest only.
 */
const CREDENTIAL = /^prp_(wkr_[0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** Whether a bearer value has a worker credential's shape (to refuse it on other routes plainly). */
export const looksLikeWorkerCredential = (authorization: string | undefined): boolean =>
  bearerOf(authorization)?.startsWith("prp_wkr_") ?? false;

export function newWorkerCredential(name: string, nowMs: number): { credential: string; row: NewWorker } {
  const workerId = `wkr_${randomBytes(8).toString("hex")}`;
  const credential = `prp_${workerId}_${randomBytes(32).toString("base64url")}`;
  return { credential, row: { workerId, name, digest: sha256Digest(credential), createdAtUnixMs: nowMs } };
}

/**
 * The worker an `Authorization: Bearer …` header presents: well-formed, known, its digest equal
 * in constant time, not revoked. Every failure is the same `token_invalid`, as for API tokens.
 */
export async function authenticateWorker(
  store: Pick<DispatchPart, "worker">,
  authorization: string | undefined,
): Promise<Result<WorkerRow>> {
  if (authorization === undefined || authorization === "")
    return fail(
      "token_missing",
      "",
      "send the worker credential as Authorization: Bearer <credential> (prp authority worker add)",
    );
  const bearer = bearerOf(authorization);
  const parts = bearer === null ? null : CREDENTIAL.exec(bearer);
  const row = parts ? await store.worker(parts[1]!) : undefined;
  const equal = digestMatches(bearer ?? "", row?.digest);
  if (!row || !equal || row.revokedAtUnixMs !== null)
    return fail("token_invalid", "", "the worker credential is unknown or revoked");
  return ok(row);
}
