/**
 * What a negotiated protocol version allows on one connection (wire.md D2, O1): no envelope
 * newer than the negotiated version is sent, and a type that exists only in a later version
 * (the session goals of v2, the external provider operation of v3) is never sent to, nor
 * carried out by, an older peer. Both the runner and the authority apply these rules.
 */

/** Command types that need a protocol version above 1, and which. */
const COMMAND_SINCE: Readonly<Record<string, number>> = {
  "session.goal.get": 2,
  "session.goal.set": 2,
  "session.goal.clear": 2,
  "external_provider.operation": 3,
};

/** Event types that need v2 or later (runtime.md §9). */
export const GOAL_EVENTS: ReadonlySet<string> = new Set([
  "session.capabilities.updated",
  "session.goal.snapshot",
  "session.goal.updated",
  "session.goal.cleared",
]);

/** The lowest protocol version that has this command type. */
export const commandSince = (type: string): number => COMMAND_SINCE[type] ?? 1;

/** The lowest protocol version that has this event type. */
export const eventSince = (eventType: string): number => (GOAL_EVENTS.has(eventType) ? 2 : 1);

/** The version an envelope's `schema` const names (`paperclip.prp.command.v2` → 2), or null. */
export function envelopeVersion(schema: unknown): number | null {
  const m = typeof schema === "string" ? /\.v([1-9][0-9]*)$/.exec(schema) : null;
  return m ? Number(m[1]) : null;
}

export interface VersionRefusal {
  code: "envelope_version_too_new" | "command_needs_newer_version";
  reason: string;
}

/** Why a command cannot be carried on a connection negotiated at `negotiated`, or null. */
export function commandVersionRefusal(
  command: { schema: unknown; type: string },
  negotiated: number,
): VersionRefusal | null {
  const version = envelopeVersion(command.schema);
  if (version !== null && version > negotiated) {
    return {
      code: "envelope_version_too_new",
      reason: `a ${String(command.schema)} envelope is newer than the negotiated protocol version ${negotiated}`,
    };
  }
  const since = commandSince(command.type);
  if (since > negotiated)
    return {
      code: "command_needs_newer_version",
      reason: `${command.type} needs protocol version ${since} or later; this connection negotiated ${negotiated}`,
    };
  return null;
}

/**
 * The envelope version an event is sent under: 1 for the types every version has, so that old
 * and new peers read them alike, and the negotiated version for a type that needs more. Null
 * when the negotiated version does not have the type: it is not sent at all.
 */
export function eventEnvelopeVersion(eventType: string, negotiated: number): number | null {
  const since = eventSince(eventType);
  if (since > negotiated) return null;
  return since === 1 ? 1 : negotiated;
}
