import assert from "node:assert/strict";
import { createCipheriv, createHash, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { protocolDir } from "../../src/contract/package-root.js";
import {
  Opener,
  Sealer,
  authKey,
  authKeyDigest,
  canonicalChallenge,
  clientProof,
  credentialId,
  domainMessage,
  frameAad,
  frameNonce,
  serverProof,
  sessionKeys,
  type ChallengeFields,
  type Direction,
} from "../../src/transport/index.js";

interface FrameVector {
  direction: Direction;
  counter: number;
  nonce: string;
  aad: string;
  plaintext: string;
  frame: string;
}

interface SessionVector {
  name: string;
  token: string;
  credentialId: string;
  authKeyDigest: string;
  challenge: ChallengeFields;
  canonicalChallenge: string;
  serverProof: string;
  clientProof: string;
  binding: string;
  sessionId: string;
  clientToCoreKey: string;
  coreToClientKey: string;
  frames: FrameVector[];
}

const vectors = JSON.parse(readFileSync(join(protocolDir(), "vectors", "secure-session.json"), "utf8")) as {
  labels: Record<string, string>;
  framing: { label: string; parts: string[]; message: string };
  sessions: SessionVector[];
};

/**
 * runtime.md §5.2–§5.4 written again from the spec text with nothing but node:crypto, so a change
 * that moved src/transport and the committed file together would still fail here.
 */
const independent = {
  frame(label: string, parts: Array<string | Buffer>): Buffer {
    const chunks: Buffer[] = [Buffer.from(label, "utf8"), Buffer.from([0])];
    for (const part of parts) {
      const bytes = typeof part === "string" ? Buffer.from(part, "utf8") : part;
      const length = Buffer.alloc(8);
      length.writeBigUInt64BE(BigInt(bytes.length));
      chunks.push(length, bytes);
    }
    return Buffer.concat(chunks);
  },
  sha(label: string, parts: Array<string | Buffer>): Buffer {
    return createHash("sha256").update(independent.frame(label, parts)).digest();
  },
  hmac(key: Buffer, label: string, parts: Array<string | Buffer>): Buffer {
    return createHmac("sha256", key).update(independent.frame(label, parts)).digest();
  },
  sortedJson(fields: object): string {
    // Flat strings, integers and null: JSON.stringify of the sorted members is the RFC 8785 form.
    return JSON.stringify(Object.fromEntries(Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : 1))));
  },
  seal(key: Buffer, sessionId: string, direction: Direction, counter: number, plaintext: string): string {
    const nonce = Buffer.concat([
      Buffer.from(direction === "client_to_core" ? "P3C1" : "P3S1", "ascii"),
      Buffer.alloc(8),
    ]);
    nonce.writeBigUInt64BE(BigInt(counter), 4);
    const cipher = createCipheriv("aes-256-gcm", key, nonce);
    cipher.setAAD(Buffer.from(["secure-frame.v1", sessionId, direction, String(counter)].join("\0"), "utf8"));
    const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `{"schema":"paperclip.runner.secure-frame.v1","counter":${counter},"ciphertext":"${ct.toString("hex")}"}`;
  },
};

const SPEC_LABELS = {
  credentialId: "paperclip-runner-credential-id-v1",
  authKey: "paperclip-runner-auth-key-v1",
  serverProof: "paperclip-runner-server-proof-v1",
  clientProof: "paperclip-runner-client-proof-v1",
  sessionBinding: "paperclip-runner-session-binding-v1",
  clientToCoreKey: "paperclip-runner-client-to-core-key-v1",
  coreToClientKey: "paperclip-runner-core-to-client-key-v1",
};

const CHALLENGE_MEMBERS = [
  "runnerInstanceId",
  "environmentLeaseId",
  "runId",
  "normalizedSessionId",
  "turnId",
  "itemId",
  "credentialId",
  "credentialKind",
  "clientNonce",
  "serverNonce",
  "selectedVersion",
  "credentialLeaseId",
  "credentialExpiresAt",
  "credentialExpiresAtUnixMs",
  "revocationEpoch",
];

describe("secure-session vectors", () => {
  it("use the spec's labels and frame a message as label, NUL, u64 BE length, bytes", () => {
    assert.deepEqual(vectors.labels, SPEC_LABELS);
    const { label, parts, message } = vectors.framing;
    assert.equal(message, independent.frame(label, parts).toString("hex"));
    assert.equal(domainMessage(label, parts).toString("hex"), message);
    // ["ab","c"] and ["a","bc"] frame differently
    assert.notEqual(domainMessage("x", ["ab", "c"]).toString("hex"), domainMessage("x", ["a", "bc"]).toString("hex"));
  });

  it("cover a bootstrap and a lease session", () => {
    assert.deepEqual(
      vectors.sessions.map((s) => s.name),
      ["bootstrap", "lease"],
    );
  });

  for (const v of vectors.sessions) {
    describe(v.name, () => {
      const key = independent.sha(SPEC_LABELS.authKey, [v.token]);

      it("matches an independent recomputation from its inputs", () => {
        assert.equal(v.credentialId, `sha256:${independent.sha(SPEC_LABELS.credentialId, [v.token]).toString("hex")}`);
        assert.equal(v.authKeyDigest, `sha256:${key.toString("hex")}`);
        assert.deepEqual(Object.keys(v.challenge).sort(), [...CHALLENGE_MEMBERS].sort());
        assert.equal(v.canonicalChallenge, independent.sortedJson(v.challenge));
        assert.equal(
          v.serverProof,
          independent.hmac(key, SPEC_LABELS.serverProof, [v.canonicalChallenge]).toString("hex"),
        );
        assert.equal(
          v.clientProof,
          independent.hmac(key, SPEC_LABELS.clientProof, [v.canonicalChallenge, v.serverProof]).toString("hex"),
        );
        const binding = independent.sha(SPEC_LABELS.sessionBinding, [
          v.canonicalChallenge,
          v.serverProof,
          v.clientProof,
        ]);
        assert.equal(v.binding, binding.toString("hex"));
        assert.equal(v.sessionId, `sha256:${binding.toString("hex")}`);
        assert.equal(v.clientToCoreKey, independent.hmac(key, SPEC_LABELS.clientToCoreKey, [binding]).toString("hex"));
        assert.equal(v.coreToClientKey, independent.hmac(key, SPEC_LABELS.coreToClientKey, [binding]).toString("hex"));
        for (const f of v.frames) {
          const frameKey = Buffer.from(f.direction === "client_to_core" ? v.clientToCoreKey : v.coreToClientKey, "hex");
          assert.equal(
            f.frame,
            independent.seal(frameKey, v.sessionId, f.direction, f.counter, f.plaintext),
            `${f.direction} ${f.counter}`,
          );
        }
      });

      it("matches src/transport's derivations", () => {
        const derived = authKey(v.token);
        assert.equal(credentialId(v.token), v.credentialId);
        assert.equal(credentialId(Buffer.from(v.token)), v.credentialId, "a token as bytes derives the same");
        assert.equal(authKeyDigest(derived), v.authKeyDigest);
        assert.equal(
          canonicalChallenge({ ...v.challenge, serverProof: "left out", extra: 1 } as ChallengeFields),
          v.canonicalChallenge,
        );
        assert.equal(serverProof(derived, v.canonicalChallenge), v.serverProof);
        assert.equal(clientProof(derived, v.canonicalChallenge, v.serverProof), v.clientProof);
        const keys = sessionKeys(derived, v.canonicalChallenge, v.serverProof, v.clientProof);
        assert.equal(keys.binding.toString("hex"), v.binding);
        assert.equal(keys.sessionId, v.sessionId);
        assert.equal(keys.clientToCore.toString("hex"), v.clientToCoreKey);
        assert.equal(keys.coreToClient.toString("hex"), v.coreToClientKey);
      });

      it("seals and opens its frames with nonce = prefix + u64 BE counter and the NUL-separated AAD", () => {
        for (const direction of ["client_to_core", "core_to_client"] as const) {
          const key = Buffer.from(direction === "client_to_core" ? v.clientToCoreKey : v.coreToClientKey, "hex");
          const frames = v.frames.filter((f) => f.direction === direction);
          assert.deepEqual(
            frames.map((f) => f.counter),
            [0, 1],
          );
          const sealer = new Sealer(Buffer.from(key), v.sessionId, direction);
          const opener = new Opener(Buffer.from(key), v.sessionId, direction);
          for (const f of frames) {
            assert.equal(frameNonce(direction, f.counter).toString("hex"), f.nonce);
            assert.equal(f.nonce.length, 24);
            assert.equal(frameAad(v.sessionId, direction, f.counter).toString("utf8"), f.aad);
            assert.deepEqual(sealer.seal(f.plaintext), { ok: true, value: f.frame });
            assert.deepEqual(opener.open(f.frame), { ok: true, value: f.plaintext });
          }
        }
      });
    });
  }
});
