import { fail, ok, type Result, type TransportErrorCode } from "../transport/errors.js";
import type { LeaseGrant } from "../transport/handshake.js";
import type { CoreChannelOptions } from "../transport/secure-channel.js";
import type { CommandQueue } from "./commands.js";
import type { Credentials } from "./credentials.js";
import type { AuthorityErrorCode } from "./errors.js";

/** Authority refusals the handshake reports under their own name; the rest are `unauthorized`. */
const SAME_NAME: ReadonlySet<AuthorityErrorCode & TransportErrorCode> = new Set([
  "unknown_credential",
  "credential_kind_mismatch",
  "credential_used",
  "credential_revoked",
  "credential_expired",
  "version_mismatch",
] as const);

/**
 * The two hooks src/transport's `acceptCoreChannel` asks of the authority (§5.3 steps 2 and 6),
 * built from the transport-independent parts. `authorize` is called by the transport only
 * after `ServerHandshake.verify` accepted the client proof, which is what makes
 * `proofVerified: true` true here. The welcome's `pendingCommands` is the lowest pending
 * command, its delivery counted on the new connection.
 */
export function coreChannelHooks(
  credentials: Credentials,
  commands: CommandQueue,
): Pick<CoreChannelOptions, "lookupCredential" | "authorize"> {
  return {
    lookupCredential: (credentialId) => credentials.lookupCredential(credentialId),
    authorize: async (request): Promise<Result<LeaseGrant>> => {
      const { runnerVersion, runnerDigest, contractDigest } = request.hello;
      const runner = { runnerVersion, runnerDigest, contractDigest: contractDigest ?? null };
      const authorized = await credentials.reauthorize({
        record: request.record,
        selectedVersion: request.challenge.selectedVersion,
        proofVerified: true,
        runner,
      });
      if (!authorized.ok) {
        const { code, path, message } = authorized.error;
        return fail(SAME_NAME.has(code as never) ? (code as TransportErrorCode) : "unauthorized", path, message);
      }
      const a = authorized.value;
      const pending = await commands.nextCommandToDeliver(a.runId, a.connectionId);
      // Only a newer connection of the same run, authorized in between, makes this fail.
      if (!pending.ok) return fail("unauthorized", pending.error.path, pending.error.message);
      return ok({
        connectionId: a.connectionId,
        connectionLeaseId: a.connectionLeaseId,
        connectionLeaseToken: a.connectionLeaseToken,
        connectionLeaseExpiresAtUnixMs: a.connectionLeaseExpiresAtUnixMs,
        connectionLeaseRevocationEpoch: a.connectionLeaseRevocationEpoch,
        ackedSourceSeq: a.ackedSourceSeq,
        pendingCommands: pending.value === null ? [] : [pending.value.command],
      });
    },
  };
}
