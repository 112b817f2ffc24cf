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
