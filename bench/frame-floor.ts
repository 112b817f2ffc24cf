/**
 * The floor under `bench:authority`'s ratio: what opening one runner event frame costs on one
 * core with nothing but Node's native parts (JSON.parse, hex decoding, AES-256-GCM), none of
 * which the wire lets a receiver skip (runtime.md §5.4: every frame after welcome is a secure
 * frame, `ciphertext` is hex, each frame has its own nonce and AAD). The frames are sealed by
 * the runner's own Sealer around the bench's own event envelopes.
 *
 * On one authority thread an event costs at least this floor plus its store work, so the ratio
 * to bare inserts of the same rows is at most bare / (bare + floor), whatever else gets faster.
 */
import { createDecipheriv, randomBytes, randomUUID } from "node:crypto";
import type { RunIdentity } from "../src/authority/identity.js";
import { controlEnvelope } from "../src/transport/envelope.js";
import { frameAad, frameNonce, GCM_TAG_BYTES, Sealer } from "../src/transport/secure-frame.js";
import { benchEvent } from "./authority-runners.js";
import { compare } from "./measure.js";

const FRAMES = 2_000;
const SESSION = "bench-floor-session";

/** Sealed text frames of events 1..FRAMES of run `id`, as its runner sends them. */
function sealedFrames(id: RunIdentity, key: Buffer): string[] {
  const sealer = new Sealer(Buffer.from(key), SESSION, "client_to_core");
  const binding = {
    identity: id,
    connectionId: randomUUID(),
    connectionLeaseId: `lease_${randomUUID()}`,
    leaseExpiresAtUnixMs: Date.now() + 3_600_000,
  };
  return Array.from({ length: FRAMES }, (_, i) => {
    const sealed = sealer.seal(
      JSON.stringify(
        controlEnvelope("event", binding, { event: benchEvent(id, i + 1) }, randomUUID(), new Date().toISOString()),
      ),
    );
    if (!sealed.ok) throw new Error(sealed.error.message);
    return sealed.value;
  });
}

/** Opens one frame with native parts only (the nonce and AAD as the channel builds them): its plaintext envelope, parsed. */
function openNatively(key: Buffer, text: string): unknown {
  const frame = JSON.parse(text) as { counter: number; ciphertext: string };
  const sealed = Buffer.from(frame.ciphertext, "hex");
  const decipher = createDecipheriv("aes-256-gcm", key, frameNonce("client_to_core", frame.counter), {
    authTagLength: GCM_TAG_BYTES,
  });
  decipher.setAAD(frameAad(SESSION, "client_to_core", frame.counter));
  decipher.setAuthTag(sealed.subarray(sealed.length - GCM_TAG_BYTES));
  const plaintext = Buffer.concat([
    decipher.update(sealed.subarray(0, sealed.length - GCM_TAG_BYTES)),
    decipher.final(),
  ]);
  return JSON.parse(plaintext.toString("utf8"));
}

/** Microseconds per event frame opened natively, the median of interleaved rounds (measure.ts). */
export function frameFloorMicros(id: RunIdentity): number {
  const key = randomBytes(32);
  const frames = sealedFrames(id, key);
  const [rate] = compare([
    { name: "open an event frame natively", items: frames, fn: (text: string) => openNatively(key, text) },
  ]);
  return 1e6 / rate!.perSecond;
}
