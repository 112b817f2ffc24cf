import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { domainMessage, type Part } from "../transport/derive.js";

export const SERVER_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SEALED_PREFIX = "sealed:v1:";
const SEALED = /^sealed:v1:([0-9a-f]{24}):((?:[0-9a-f]{2})*):([0-9a-f]{32})$/;
const HEX_KEY = /^[0-9a-fA-F]{64}$/;

/**
 * The authority's server key: 32 bytes kept outside the database (a file or an environment
 * variable, server-key-source.ts). Every stored ticket and lease key is sealed with it
 * (AES-256-GCM), so a copy of the database alone authenticates nothing. The key never leaves
 * this object; `destroy` zeroes it.
 */
export class ServerKey {
  readonly #key: Buffer;

  private constructor(key: Buffer) {
    this.#key = key;
  }

  static generate(): ServerKey {
    return new ServerKey(randomBytes(SERVER_KEY_BYTES));
  }

  /** 64 hex digits, surrounding whitespace ignored (what `openssl rand -hex 32` prints); null otherwise. */
  static fromHex(text: string): ServerKey | null {
    const hex = text.trim();
    return HEX_KEY.test(hex) ? new ServerKey(Buffer.from(hex, "hex")) : null;
  }

  /**
   * `sealed:v1:<iv>:<ciphertext>:<tag>` (hex) of `plaintext`, authenticated together with the
   * domain-framed `label` and `context` (runtime.md §5.2 framing): a sealed value opens only
   * under the same label and context, so it cannot be moved to another row.
   */
  seal(plaintext: Uint8Array, label: string, context: readonly Part[]): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(domainMessage(label, context));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return `${SEALED_PREFIX}${iv.toString("hex")}:${body.toString("hex")}:${cipher.getAuthTag().toString("hex")}`;
  }

  /** The plaintext, or null when `sealed` is not in the format or does not open under this key, label and context. Zero it when done. */
  open(sealed: string, label: string, context: readonly Part[]): Buffer | null {
    const parts = SEALED.exec(sealed);
    if (!parts) return null;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(parts[1]!, "hex"), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(domainMessage(label, context));
      decipher.setAuthTag(Buffer.from(parts[3]!, "hex"));
      return Buffer.concat([decipher.update(Buffer.from(parts[2]!, "hex")), decipher.final()]);
    } catch {
      return null; // the tag did not verify: another key, another row, or altered
    }
  }

  destroy(): void {
    this.#key.fill(0);
  }
}
