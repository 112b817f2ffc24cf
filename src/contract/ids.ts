import { createHash } from "node:crypto";

/**
 * Stable ids: an ASCII letter or digit, then letters, digits and `._:-` (runtime.md §6.1,
 * §15.4). Only the length bound differs, by where an id travels.
 */
const idPattern = (maxLength: number): RegExp => new RegExp(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,${maxLength - 1}}$`);

/**
 * Ids a runner is started with and puts into its event envelopes (run, session, runner
 * instance; in durable mode also lease, turn and item): ≤160, the envelope bound of run,
 * session and source ids and the v2/v3 bound of turn and item ids (runtime.md §15.4, wire.md
 * O2), so such an id is valid in every protocol version.
 */
export const RUNNER_ID_PATTERN = idPattern(160);

/** Run identity values the authority accepts (runtime.md §6.1, §15.3): ≤240. */
export const AUTHORITY_ID_PATTERN = idPattern(240);

/** The bound of the ids a runner and a controller mint: `sourceEventId` and `commandId` (wire.md §5.1, §8.1). */
const MAX_MINTED_ID = 160;

/**
 * `<prefix>_<owner>_<seq padded to width>`, as runners and controllers name events and commands.
 * An owner id may be 160 characters itself, so when the whole id would pass the bound the owner
 * is replaced by 40 hex digits of its SHA-256: the same id for the same seq after a restart, and
 * as unique as the owner id.
 */
export function sequencedId(prefix: string, owner: string, seq: number, width: number): string {
  const digits = String(seq).padStart(width, "0");
  const id = `${prefix}_${owner}_${digits}`;
  return id.length <= MAX_MINTED_ID
    ? id
    : `${prefix}_${createHash("sha256").update(owner).digest("hex").slice(0, 40)}_${digits}`;
}
