/** The session reducer (runtime.md §3): pure, deterministic, no I/O and no clock. */
export { applyEvent, applyEvents, SessionDraft, sourceKey } from "./apply-event.js";
export { readEventStream, type ReadStream, type StreamError } from "./event-stream.js";
export { reduceEvents, reduceFixture } from "./reduce.js";
export { prettyJson, replayEventStream, replayFixture, type Replayed } from "./replay.js";
export * from "./snapshot.js";
export { paritySummary, type ParitySummary } from "./summary.js";
