/** The PRP protocol versions this project implements (wire.md D2), and nothing else. */
export const SUPPORTED_PROTOCOL_VERSIONS = [1, 2, 3] as const;
export type ProtocolVersion = (typeof SUPPORTED_PROTOCOL_VERSIONS)[number];
export const MIN_PROTOCOL_VERSION = 1;
export const MAX_PROTOCOL_VERSION = 3;
/** Fixture file format versions this project reads. */
export const SUPPORTED_FIXTURE_VERSIONS = [1] as const;

export const isSupportedProtocolVersion = (v: unknown): v is ProtocolVersion =>
  (SUPPORTED_PROTOCOL_VERSIONS as readonly unknown[]).includes(v);

export const SUPPORTED_RANGE_TEXT = `${MIN_PROTOCOL_VERSION}-${MAX_PROTOCOL_VERSION}`;

/** Limits of the codec (wire.md §14.4, issue "Bad input"). */
export const MAX_FRAME_BYTES = 1_048_576;
export const MAX_JSON_DEPTH = 64;
