import { createHash } from "node:crypto";
import { canonicalJson } from "./canonical-json.js";

/** Bare lower-case hex SHA-256 (manifest and output-body spelling). */
export const sha256Hex = (data: string | Uint8Array): string => createHash("sha256").update(data).digest("hex");

/** Prefixed `sha256:<hex>` digest of raw bytes (native-execution and tool-output spelling). */
export const sha256Digest = (data: string | Uint8Array): string => `sha256:${sha256Hex(data)}`;

/** `sha256:` digest of a value's canonical JSON: semantic digests and command fingerprints. */
export const canonicalDigest = (value: unknown): string => sha256Digest(canonicalJson(value));

/** Text as the manifest hashes it: CRLF normalised to LF, nothing else changed. */
export const normaliseNewlines = (text: string): string => text.replace(/\r\n/g, "\n");
