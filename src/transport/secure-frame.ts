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

/** A counter is a safe integer: at most 16 decimal digits. */
const MAX_COUNTER_DIGITS = String(Number.MAX_SAFE_INTEGER).length;

/**
 * One direction's nonce and AAD, rewritten in place for each counter. A sealer or opener keeps
 * one, so a frame allocates neither: at 10,000 runners every renewal is two frames, and what
 * each frame allocates sets how often the collector runs (bench:idle).
 */
class FrameInputs {
  /** 12 bytes: the direction prefix, then the counter as u64 big-endian (two u32 halves: no BigInt per frame). */
  private readonly nonce: Buffer;
  /** `secure-frame.v1 NUL sessionId NUL direction NUL decimal counter`: binds each frame to its session, direction and place. */
  private readonly aad: Buffer;
  private readonly aadHead: number;
  /** The AAD for each number of counter digits: views of `aad`, made once. */
  private readonly aadViews: Buffer[] = [];

  constructor(sessionId: string, direction: Direction) {
    const head = Buffer.from(`secure-frame.v1\0${sessionId}\0${direction}\0`, "utf8");
    // One allocation of its own, not a slice of Buffer's shared pool: a slice held for the
    // connection's life would keep the whole 8 KB slab it came from.
    const both = Buffer.alloc(GCM_NONCE_BYTES + head.length + MAX_COUNTER_DIGITS);
    this.nonce = both.subarray(0, GCM_NONCE_BYTES);
    this.nonce.write(NONCE_PREFIX[direction], 0, "ascii");
    this.aad = both.subarray(GCM_NONCE_BYTES);
    this.aadHead = head.copy(this.aad);
  }

  /** The nonce of `counter`; the same buffer each call, valid until the next. */
  nonceOf(counter: number): Buffer {
    this.nonce.writeUInt32BE(Math.floor(counter / 2 ** 32), 4);
    this.nonce.writeUInt32BE(counter >>> 0, 8);
    return this.nonce;
  }

  /** The AAD of `counter`; valid until the next call. */
  aadOf(counter: number): Buffer {
    const digits = this.aad.write(String(counter), this.aadHead, "latin1");
    return (this.aadViews[digits] ??= this.aad.subarray(0, this.aadHead + digits));
  }
}

/** The nonce of one frame (runtime.md §5.4), in a buffer of its own. */
export const frameNonce = (direction: Direction, counter: number): Buffer =>
  Buffer.from(new FrameInputs("", direction).nonceOf(counter));

/** The AAD of one frame (runtime.md §5.4), in a buffer of its own. */
export const frameAad = (sessionId: string, direction: Direction, counter: number): Buffer =>
  Buffer.from(new FrameInputs(sessionId, direction).aadOf(counter));

/**
 * How every sealer here lays a frame out: `{"schema":…,"counter":N,"ciphertext":"<hex>"}`,
 * JSON.stringify's layout of the three members, written as bytes around the counter and the hex.
 * A frame in exactly this layout is read without JSON.parse, without a string for its hex and
 * without the hex round trip (see canonicalFrame); any other layout goes the general way. At
 * 10,000 idle runners each renewal allocated some 30 KB and the collector was most of the
 * authority's CPU (bench:idle).
 */
const FRAME_HEAD = Buffer.from(`{"schema":"${SECURE_FRAME_SCHEMA}","counter":`, "latin1");
const CIPHERTEXT_HEAD = Buffer.from(`,"ciphertext":"`, "latin1");
const FRAME_TAIL = Buffer.from(`"}`, "latin1");

/** The bytes of a frame whose counter has `digits` digits and whose sealed bytes number `sealedBytes`. */
const frameBytes = (digits: number, sealedBytes: number): number =>
  FRAME_HEAD.length + digits + CIPHERTEXT_HEAD.length + 2 * sealedBytes + FRAME_TAIL.length;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

/** Lower-case hex digits by byte value: -1 for anything else (upper case included, as the general path refuses it). */
const HEX_VALUE = new Int8Array(256).fill(-1);
const HEX_DIGITS = Buffer.from("0123456789abcdef", "latin1");
HEX_DIGITS.forEach((digit, value) => (HEX_VALUE[digit] = value));

/**
 * The longest text frame that carries a plaintext of `maxFrameBytes` (with the longest counter).
 * The 1 MiB limit is on the PRP frame, the plaintext; hex doubles it on the wire, so a receiver
 * checks the text it receives against this bound, and the plaintext again once opened.
 */
export const maxSecureFrameBytes = (maxFrameBytes = MAX_FRAME_BYTES): number =>
  frameBytes(MAX_COUNTER_DIGITS, maxFrameBytes + GCM_TAG_BYTES);

/**
 * Where a plaintext is encoded for sealing: one buffer for every sealer, as sealing is
 * synchronous and the cipher copies its input. A slice of Buffer's shared pool per frame cost a
 * new 8 KB slab every dozen frames (bench:idle); a plaintext larger than this gets its own.
 */
const plaintextScratch = Buffer.alloc(16 * 1024);

/** `plaintext` as UTF-8, in the scratch buffer when it fits; the caller zeroes it after use. */
function plaintextBytes(plaintext: string): Buffer {
  const length = Buffer.byteLength(plaintext, "utf8");
  if (length > plaintextScratch.length) return Buffer.from(plaintext, "utf8");
  plaintextScratch.write(plaintext, 0, "utf8");
  return plaintextScratch.subarray(0, length);
}

/**
 * Seals one direction's plaintexts with counters 0, 1, 2, … Takes ownership of the key and
 * zeroes it on destroy(). A refused plaintext (too large) uses no counter.
 */
export class Sealer {
  private counter = 0;
  private readonly inputs: FrameInputs;

  constructor(
    private readonly key: Buffer,
    sessionId: string,
    readonly direction: Direction,
    private readonly maxFrameBytes = MAX_FRAME_BYTES,
  ) {
    this.inputs = new FrameInputs(sessionId, direction);
  }

  /** The frame's text; sealFrame() gives the same frame as the bytes a socket sends. */
  seal(plaintext: string): Result<string> {
    const frame = this.sealFrame(plaintext);
    return frame.ok ? ok(frame.value.toString("latin1")) : frame;
  }

  /**
   * The frame as UTF-8 bytes (all ASCII), written in place: the cipher's output goes into the
   * frame as hex, with no JSON text and no copy for the socket.
   */
  sealFrame(plaintext: string): Result<Buffer> {
    const bytes = plaintextBytes(plaintext);
    try {
      if (bytes.length > this.maxFrameBytes)
        return fail("frame_too_large", "", `the frame is ${bytes.length} bytes; the limit is ${this.maxFrameBytes}`);
      // The counter travels as a JSON number: past 2^53 it would no longer round-trip exactly.
      if (this.counter > Number.MAX_SAFE_INTEGER)
        return fail("counter_exhausted", "/counter", "the frame counter is exhausted; open a new session");
      const cipher = createCipheriv("aes-256-gcm", this.key, this.inputs.nonceOf(this.counter), {
        authTagLength: GCM_TAG_BYTES,
      });
      cipher.setAAD(this.inputs.aadOf(this.counter));
      const body = cipher.update(bytes);
      cipher.final(); // GCM adds no bytes at the end; this computes the tag
      const tag = cipher.getAuthTag();
      const digits = String(this.counter++);
      const frame = Buffer.allocUnsafe(frameBytes(digits.length, body.length + tag.length));
      let at = FRAME_HEAD.copy(frame, 0);
      at += frame.write(digits, at, "latin1");
      at += CIPHERTEXT_HEAD.copy(frame, at);
      at = writeHex(frame, at, body);
      at = writeHex(frame, at, tag);
      FRAME_TAIL.copy(frame, at);
      return ok(frame);
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

/** Writes `bytes` as lower-case hex at `at`; returns where it ended. Native: a third of a JS loop's time. */
function writeHex(frame: Buffer, at: number, bytes: Buffer): number {
  return at + frame.write(bytes.toString("hex"), at, "latin1");
}

/** True when `bytes` holds `part` at `at`. */
const holds = (bytes: Buffer, at: number, part: Buffer): boolean =>
  at + part.length <= bytes.length && bytes.compare(part, 0, part.length, at, at + part.length) === 0;

export interface SealedFrame {
  counter: number;
  sealed: Buffer;
}

/**
 * A frame in the layout every sealer here writes, read in one pass, or null for any other
 * text, which then goes through JSON (as a peer's reordered or spaced frame would). It accepts
 * only what the general path accepts and reads it the same: one object, these three members
 * once each, a counter without a leading zero that is a safe integer, and lower-case hex of at
 * least the tag.
 */
export function canonicalFrame(bytes: Buffer): SealedFrame | null {
  if (!holds(bytes, 0, FRAME_HEAD)) return null;
  let at = FRAME_HEAD.length;
  const digitsAt = at;
  while (at < bytes.length && bytes[at]! >= DIGIT_0 && bytes[at]! <= DIGIT_9) at++;
  const digits = at - digitsAt;
  if (digits === 0 || digits > 16 || (digits > 1 && bytes[digitsAt] === DIGIT_0)) return null;
  const counter = Number(bytes.toString("latin1", digitsAt, at));
  if (!Number.isSafeInteger(counter) || !holds(bytes, at, CIPHERTEXT_HEAD)) return null;
  const hexAt = at + CIPHERTEXT_HEAD.length;
  const hexLength = bytes.length - FRAME_TAIL.length - hexAt;
  if (hexLength < 2 * GCM_TAG_BYTES || hexLength % 2 !== 0 || !holds(bytes, hexAt + hexLength, FRAME_TAIL)) return null;
  const sealed = Buffer.allocUnsafe(hexLength / 2);
  for (let i = 0, j = hexAt; i < sealed.length; i++, j += 2) {
    const high = HEX_VALUE[bytes[j]!]!;
    const low = HEX_VALUE[bytes[j + 1]!]!;
    if (high < 0 || low < 0) return null; // a quote or anything else inside: not this layout
    sealed[i] = (high << 4) | low;
  }
  return { counter, sealed };
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/** The general path: any JSON layout of the frame, refused as the protocol names each fault. */
function readFrame(text: string, maxBytes: number): SealedFrame | Result<never> {
  const parsed = parseFrameText(text, maxBytes);
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
  return { counter, sealed };
}

/**
 * Opens one direction's frames and accepts only counter == expected, from 0. The first refusal
 * is final: every later call returns it again, because the connection must close (§5.4).
 * Takes ownership of the key and zeroes it on destroy().
 */
export class Opener {
  private expected = 0;
  private failure: TransportError | null = null;
  private readonly inputs: FrameInputs;

  constructor(
    private readonly key: Buffer,
    sessionId: string,
    readonly direction: Direction,
    private readonly maxFrameBytes = MAX_FRAME_BYTES,
  ) {
    this.inputs = new FrameInputs(sessionId, direction);
  }

  /** A frame as text, or as the bytes a socket received (UTF-8, already checked by ws). */
  open(frame: string | Buffer): Result<string> {
    if (this.failure) return { ok: false, error: this.failure };
    const opened = this.tryOpen(frame);
    if (!opened.ok) this.failure = opened.error;
    return opened;
  }

  destroy(): void {
    this.key.fill(0);
  }

  private tryOpen(frame: string | Buffer): Result<string> {
    const maxBytes = maxSecureFrameBytes(this.maxFrameBytes);
    const fast = typeof frame === "string" || frame.length > maxBytes ? null : canonicalFrame(frame);
    const read = fast ?? readFrame(typeof frame === "string" ? frame : frame.toString("utf8"), maxBytes);
    if (!("counter" in read)) return read;
    const { counter, sealed } = read;
    if (counter < this.expected)
      return fail("frame_replayed", "/counter", `counter ${counter} was already received; expected ${this.expected}`);
    if (counter > this.expected)
      return fail("frame_gap", "/counter", `counter ${counter} skips ahead; expected ${this.expected}`);
    let plaintext: Buffer;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, this.inputs.nonceOf(counter), {
        authTagLength: GCM_TAG_BYTES,
      });
      decipher.setAAD(this.inputs.aadOf(counter));
      decipher.setAuthTag(sealed.subarray(sealed.length - GCM_TAG_BYTES));
      plaintext = decipher.update(sealed.subarray(0, sealed.length - GCM_TAG_BYTES));
      decipher.final(); // GCM holds no bytes back; this checks the tag
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
