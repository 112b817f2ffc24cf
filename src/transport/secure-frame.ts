import { createCipheriv, createDecipheriv } from "node:crypto";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import { isCount, isPlainObject, parseFrameText } from "./envelope.js";
import { fail, ok, type Result, type TransportError } from "./errors.js";

/** runtime.md §5.4. */
export const SECURE_FRAME_SCHEMA = "paperclip.runner.secure-frame.v1";
export const GCM_TAG_BYTES = 16;
export const GCM_NONCE_BYTES = 12;

export type Direction = "client_to_core" | "core_to_client";

/** The 4-byte ASCII nonce prefixes: the two directions never share a nonce under one key pair. */
export const NONCE_PREFIX: Readonly<Record<Direction, string>> = { client_to_core: "P3C1", core_to_client: "P3S1" };

/** 12 bytes: the direction prefix, then the counter as u64 big-endian. */
export function frameNonce(direction: Direction, counter: number): Buffer {
  const nonce = Buffer.alloc(GCM_NONCE_BYTES);
  nonce.write(NONCE_PREFIX[direction], 0, "ascii");
  nonce.writeBigUInt64BE(BigInt(counter), 4);
  return nonce;
}

/** `secure-frame.v1 NUL sessionId NUL direction NUL decimal counter`: binds each frame to its session, direction and place. */
export const frameAad = (sessionId: string, direction: Direction, counter: number): Buffer =>
  Buffer.from(`secure-frame.v1\0${sessionId}\0${direction}\0${counter}`, "utf8");

const secureFrameText = (counter: number, ciphertextHex: string): string =>
  JSON.stringify({ schema: SECURE_FRAME_SCHEMA, counter, ciphertext: ciphertextHex });

/**
 * The longest text frame that carries a plaintext of `maxFrameBytes` (with the longest counter).
 * The 1 MiB limit is on the PRP frame, the plaintext; hex doubles it on the wire, so a receiver
 * checks the text it receives against this bound, and the plaintext again once opened.
 */
export const maxSecureFrameBytes = (maxFrameBytes = MAX_FRAME_BYTES): number =>
  secureFrameText(Number.MAX_SAFE_INTEGER, "").length + 2 * (maxFrameBytes + GCM_TAG_BYTES);

/**
 * Seals one direction's plaintexts with counters 0, 1, 2, … Takes ownership of the key and
 * zeroes it on destroy(). A refused plaintext (too large) uses no counter.
 */
export class Sealer {
  private counter = 0;

  constructor(
    private readonly key: Buffer,
    private readonly sessionId: string,
    readonly direction: Direction,
    private readonly maxFrameBytes = MAX_FRAME_BYTES,
  ) {}

  seal(plaintext: string): Result<string> {
    const bytes = Buffer.from(plaintext, "utf8");
    try {
      if (bytes.length > this.maxFrameBytes)
        return fail("frame_too_large", "", `the frame is ${bytes.length} bytes; the limit is ${this.maxFrameBytes}`);
      // The counter travels as a JSON number: past 2^53 it would no longer round-trip exactly.
      if (this.counter > Number.MAX_SAFE_INTEGER)
        return fail("counter_exhausted", "/counter", "the frame counter is exhausted; open a new session");
      const cipher = createCipheriv("aes-256-gcm", this.key, frameNonce(this.direction, this.counter), {
        authTagLength: GCM_TAG_BYTES,
      });
      cipher.setAAD(frameAad(this.sessionId, this.direction, this.counter));
      const sealed = Buffer.concat([cipher.update(bytes), cipher.final(), cipher.getAuthTag()]);
      return ok(secureFrameText(this.counter++, sealed.toString("hex")));
    } finally {
      bytes.fill(0); // a welcome carries the lease token
    }
  }

  destroy(): void {
    this.key.fill(0);
  }
}

/**
 * The sealed bytes of lower-case hex text, or null. Decoding and encoding again is the check:
 * Buffer stops at the first pair that is not hex and accepts upper case, and either makes the
 * round trip differ. Both passes are native; a pattern test over each frame cost more.
 */
function lowerHexBytes(text: string): Buffer | null {
  const bytes = Buffer.from(text, "hex");
  return bytes.length * 2 === text.length && bytes.toString("hex") === text ? bytes : null;
}
const utf8 = new TextDecoder("utf-8", { fatal: true });

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * Opens one direction's frames and accepts only counter == expected, from 0. The first refusal
 * is final: every later call returns it again, because the connection must close (§5.4).
 * Takes ownership of the key and zeroes it on destroy().
 */
export class Opener {
  private expected = 0;
  private failure: TransportError | null = null;

  constructor(
    private readonly key: Buffer,
    private readonly sessionId: string,
    readonly direction: Direction,
    private readonly maxFrameBytes = MAX_FRAME_BYTES,
  ) {}

  open(text: string): Result<string> {
    if (this.failure) return { ok: false, error: this.failure };
    const opened = this.tryOpen(text);
    if (!opened.ok) this.failure = opened.error;
    return opened;
  }

  destroy(): void {
    this.key.fill(0);
  }

  private tryOpen(text: string): Result<string> {
    const parsed = parseFrameText(text, maxSecureFrameBytes(this.maxFrameBytes));
    if (!parsed.ok) return parsed;
    const frame = parsed.value;
    if (!isPlainObject(frame) || frame.schema === undefined)
      return fail("plaintext_frame", "", "a frame after welcome must be a secure frame");
    if (frame.schema !== SECURE_FRAME_SCHEMA)
      return fail("malformed_frame", "/schema", `schema must be "${SECURE_FRAME_SCHEMA}"`);
    const { counter, ciphertext } = frame;
    if (!isCount(counter)) return fail("malformed_frame", "/counter", "counter must be a non-negative integer");
    const sealed =
      typeof ciphertext === "string" && ciphertext.length >= 2 * GCM_TAG_BYTES ? lowerHexBytes(ciphertext) : null;
    if (sealed === null)
      return fail("malformed_frame", "/ciphertext", "ciphertext must be lower-case hex of at least the 16-byte tag");
    if (counter < this.expected)
      return fail("frame_replayed", "/counter", `counter ${counter} was already received; expected ${this.expected}`);
    if (counter > this.expected)
      return fail("frame_gap", "/counter", `counter ${counter} skips ahead; expected ${this.expected}`);
    let plaintext: Buffer;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, frameNonce(this.direction, counter), {
        authTagLength: GCM_TAG_BYTES,
      });
      decipher.setAAD(frameAad(this.sessionId, this.direction, counter));
      decipher.setAuthTag(sealed.subarray(sealed.length - GCM_TAG_BYTES));
      plaintext = Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - GCM_TAG_BYTES)), decipher.final()]);
    } catch {
      return fail("tag_mismatch", "/ciphertext", "the frame failed authentication");
    }
    try {
      if (plaintext.length > this.maxFrameBytes)
        return fail(
          "frame_too_large",
          "",
          `the opened frame is ${plaintext.length} bytes; the limit is ${this.maxFrameBytes}`,
        );
      const decoded = decodeUtf8(plaintext);
      if (decoded === null) return fail("malformed_frame", "/ciphertext", "the opened frame is not UTF-8");
      this.expected++;
      return ok(decoded);
    } finally {
      plaintext.fill(0);
    }
  }
}
