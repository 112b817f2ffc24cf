/**
 * Readers for event payloads. Most payloads are open objects whose fields the schema does not
 * type, so the reducer reads them defensively: a field of an unexpected type counts as absent
 * instead of making the reducer throw.
 */
export type Json = Record<string, unknown>;

export const isRecord = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

export const record = (value: unknown): Json => (isRecord(value) ? value : {});

export const text = (value: unknown, fallback = ""): string => (typeof value === "string" ? value : fallback);

/** A non-empty string, or the fallback. */
export const nonEmpty = (value: unknown, fallback: string): string =>
  typeof value === "string" && value.length > 0 ? value : fallback;

export const finite = (value: unknown): number | null =>
  typeof value === "number" && Number.isFinite(value) ? value : null;

/** The last dot-separated segment of an event type: `runtime_request.resolved` → `resolved`. */
export const lastSegment = (eventType: string): string => eventType.slice(eventType.lastIndexOf(".") + 1);
