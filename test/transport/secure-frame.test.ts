import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { MAX_FRAME_BYTES } from "../../src/contract/versions.js";
import { Opener, Sealer, maxSecureFrameBytes, type Direction, type Result } from "../../src/transport/index.js";

const SESSION = `sha256:${"11".repeat(32)}`;

function pair(direction: Direction = "client_to_core", maxFrameBytes = MAX_FRAME_BYTES) {
  const key = randomBytes(32);
  return {
    sealer: new Sealer(Buffer.from(key), SESSION, direction, maxFrameBytes),
    opener: new Opener(Buffer.from(key), SESSION, direction, maxFrameBytes),
    key,
  };
}

const value = <T>(r: Result<T>): T => {
  assert.ok(r.ok, r.ok ? "" : `${r.error.code}: ${r.error.message}`);
  return r.value;
};
const code = (r: Result<unknown>): string => (r.ok ? "ok" : r.error.code);

/** A sealed frame with one field changed. */
function edit(frame: string, change: (f: { schema: string; counter: number; ciphertext: string }) => void): string {
  const parsed = JSON.parse(frame);
  change(parsed);
  return JSON.stringify(parsed);
}

const flipHex = (hex: string, at: number): string =>
  hex.slice(0, at) + (hex[at] === "0" ? "1" : "0") + hex.slice(at + 1);

describe("secure frames", () => {
  it("open in order from counter 0 and carry the exact frame shape", () => {
    const { sealer, opener } = pair();
    const frames = ["a", "b", "c"].map((t) => value(sealer.seal(t)));
    assert.deepEqual(Object.keys(JSON.parse(frames[0]!)), ["schema", "counter", "ciphertext"]);
    assert.deepEqual(
      frames.map((f) => JSON.parse(f).counter),
      [0, 1, 2],
    );
    assert.deepEqual(
      frames.map((f) => value(opener.open(f))),
      ["a", "b", "c"],
    );
  });

  it("refuse a replayed frame, and every frame after it", () => {
    const { sealer, opener } = pair();
    const first = value(sealer.seal("one"));
    const second = value(sealer.seal("two"));
    value(opener.open(first));
    assert.equal(code(opener.open(first)), "frame_replayed");
    assert.equal(code(opener.open(second)), "frame_replayed", "the first refusal is final");
  });

  it("refuse a reordered frame and a gap", () => {
    const { sealer, opener } = pair();
    const frames = [0, 1, 2].map((i) => value(sealer.seal(String(i))));
    assert.equal(code(opener.open(frames[1]!)), "frame_gap");
    const other = pair();
    const skipped = [0, 1, 2].map((i) => value(other.sealer.seal(String(i))));
    value(other.opener.open(skipped[0]!));
    assert.equal(code(other.opener.open(skipped[2]!)), "frame_gap");
  });

  it("refuse a plaintext envelope where a secure frame must be", () => {
    const { opener } = pair();
    assert.equal(
      code(opener.open(JSON.stringify({ protocol: "paperclip.runner", version: 1, kind: "ack", payload: {} }))),
      "plaintext_frame",
    );
    assert.equal(code(pair().opener.open("[1]")), "plaintext_frame");
    assert.equal(code(pair().opener.open("not json")), "invalid_json");
  });

  it("refuse a tampered tag, ciphertext, counter, session, direction or key", () => {
    const { sealer, key } = pair();
    const frame = value(sealer.seal("hello world"));
    const hex: string = JSON.parse(frame).ciphertext;
    const cases: Array<[string, string, Opener]> = [
      [
        "tag",
        edit(frame, (f) => (f.ciphertext = flipHex(hex, hex.length - 1))),
        new Opener(Buffer.from(key), SESSION, "client_to_core"),
      ],
      [
        "ciphertext",
        edit(frame, (f) => (f.ciphertext = flipHex(hex, 0))),
        new Opener(Buffer.from(key), SESSION, "client_to_core"),
      ],
      ["AAD: another session", frame, new Opener(Buffer.from(key), `sha256:${"22".repeat(32)}`, "client_to_core")],
      ["AAD and nonce: the other direction", frame, new Opener(Buffer.from(key), SESSION, "core_to_client")],
      ["key", frame, new Opener(randomBytes(32), SESSION, "client_to_core")],
    ];
    for (const [what, text, opener] of cases) assert.equal(code(opener.open(text)), "tag_mismatch", what);
    // A counter edited to what the receiver expects changes the nonce and AAD: the tag fails.
    const second = value(sealer.seal("second"));
    assert.equal(
      code(new Opener(Buffer.from(key), SESSION, "client_to_core").open(edit(second, (f) => (f.counter = 0)))),
      "tag_mismatch",
    );
  });

  it("refuse malformed frames by field", () => {
    const { sealer } = pair();
    const frame = value(sealer.seal("x"));
    const cases: Array<[string, (f: { schema: string; counter: number; ciphertext: string }) => void, string]> = [
      ["/schema", (f) => (f.schema = "paperclip.runner.secure-frame.v2"), "malformed_frame"],
      ["/counter", (f) => (f.counter = -1), "malformed_frame"],
      ["/counter", (f) => ((f as { counter: unknown }).counter = "0"), "malformed_frame"],
      ["/ciphertext", (f) => (f.ciphertext = f.ciphertext.toUpperCase()), "malformed_frame"],
      ["/ciphertext", (f) => (f.ciphertext = "00"), "malformed_frame"],
      ["/ciphertext", (f) => (f.ciphertext = `${f.ciphertext}0`), "malformed_frame"],
    ];
    for (const [path, change, expected] of cases) {
      const result = pair().opener.open(edit(frame, change));
      assert.equal(code(result), expected, path);
      assert.equal(result.ok ? "" : result.error.path, path);
    }
  });

  it("seal a plaintext of exactly 1 MiB, refuse one byte more without using a counter", () => {
    const { sealer, opener } = pair();
    assert.equal(code(sealer.seal("x".repeat(MAX_FRAME_BYTES + 1))), "frame_too_large");
    assert.equal(code(sealer.seal("é".repeat(MAX_FRAME_BYTES / 2) + "x")), "frame_too_large", "bytes, not characters");
    const atLimit = value(sealer.seal("x".repeat(MAX_FRAME_BYTES)));
    assert.equal(JSON.parse(atLimit).counter, 0);
    assert.ok(Buffer.byteLength(atLimit) <= maxSecureFrameBytes());
    assert.equal(value(opener.open(atLimit)).length, MAX_FRAME_BYTES);
  });

  it("refuse received text over the sealed size of a 1 MiB plaintext before parsing it", () => {
    const { opener } = pair();
    const over = `{"schema":"paperclip.runner.secure-frame.v1","counter":0,"ciphertext":"${"0".repeat(maxSecureFrameBytes())}"}`;
    assert.equal(code(opener.open(over)), "frame_too_large");
  });

  it("refuse an opened plaintext over the receiver's limit (a peer with a larger limit)", () => {
    const key = randomBytes(32);
    const sealer = new Sealer(Buffer.from(key), SESSION, "core_to_client", 200);
    const opener = new Opener(Buffer.from(key), SESSION, "core_to_client", 100);
    assert.equal(code(opener.open(value(sealer.seal("y".repeat(101))))), "frame_too_large");
  });

  it("zero its key on destroy", () => {
    const key = randomBytes(32);
    const sealer = new Sealer(key, SESSION, "client_to_core");
    sealer.destroy();
    assert.ok(key.equals(Buffer.alloc(32)));
  });
});
