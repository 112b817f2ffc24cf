import { decode, type ContractError, type PrpEvent } from "../contract/index.js";
import { readEventStream, type StreamError } from "./event-stream.js";
import { reduceEvents, reduceFixture } from "./reduce.js";
import type { SessionSnapshot } from "./snapshot.js";

/** A replayed input: the snapshot and the events it was reduced from, in delivery order. */
export type Replayed =
  { ok: true; snapshot: SessionSnapshot; events: PrpEvent[] } | { ok: false; error: ContractError | StreamError };

/**
 * Decodes and reduces a replay fixture. The one entry point for every front end (the CLI, the
 * golden generator), so that they cannot drift.
 */
export function replayFixture(bytes: Uint8Array | string): Replayed {
  const decoded = decode(bytes, { kind: "fixture" });
  if (!decoded.ok) return { ok: false, error: decoded.error };
  return { ok: true, snapshot: reduceFixture(decoded.value), events: decoded.value.events as PrpEvent[] };
}

/** Reads and reduces an NDJSON event stream. It has no identity or capabilities, so both are null. */
export function replayEventStream(bytes: Uint8Array): Replayed {
  const read = readEventStream(bytes);
  if (!read.ok) return read;
  return { ok: true, snapshot: reduceEvents(null, null, read.events), events: read.events };
}

/** The golden file format: 2-space JSON with a trailing newline (wire.md §15.2). */
export const prettyJson = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;
