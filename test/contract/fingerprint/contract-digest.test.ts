import assert from "node:assert/strict";
import { mkdirSync, rmSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { computeContractDigest, type ContractDigest } from "../../../src/contract/fingerprint/contract-digest.js";
import { buildContractDigest } from "../../../src/contract/fingerprint/committed-digest.js";
import { packageRoot } from "../../../src/contract/package-root.js";
import { ContractTrees, editJson, editText } from "../../support/contract-tree.js";

const trees = new ContractTrees();
after(() => trees.cleanup());
const copyTree = () => trees.copy();

function digestOf(root: string): ContractDigest {
  const r = computeContractDigest(root);
  assert.ok(r.ok, r.ok ? "" : `${r.error.code} at ${r.error.path}: ${r.error.message}`);
  return r.value;
}

const BASE = digestOf(packageRoot()).contractDigest;

const edit = editText;

const RESULT = "protocol/schemas/result.schema.json";

function itemProperties(json: any): any {
  // remainingWork[] items, wherever result.schema.json nests them.
  const stack = [json];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node && typeof node === "object") {
      if (node.properties?.blocksCompletion && node.properties?.description) return node.properties;
      stack.push(...Object.values(node));
    }
  }
  throw new Error("remainingWork[] items not found in result.schema.json");
}

describe("contract digest: what keeps it (runtime.md §12.2)", () => {
  const keeps: Array<[string, (root: string) => void]> = [
    [
      "a changed schema description",
      (r) =>
        editJson(r, RESULT, (j) => {
          j.description = `${j.description} Reworded.`;
        }),
    ],
    [
      "a changed title and $comment",
      (r) =>
        editJson(r, RESULT, (j) => {
          j.title = "Renamed result";
          j.$comment = "note";
        }),
    ],
    [
      "a reformatted schema (indent, member order)",
      (r) =>
        edit(r, RESULT, (t) => {
          const j = JSON.parse(t);
          const reversed = Object.fromEntries(Object.entries(j).reverse());
          return JSON.stringify(reversed, null, "\t");
        }),
    ],
    [
      "examples added to a property",
      (r) =>
        editJson(r, RESULT, (j) => {
          itemProperties(j).description.examples = ["write the tests"];
        }),
    ],
    [
      "a comment in a registered constant list",
      (r) =>
        edit(r, "src/transport/envelope.ts", (t) =>
          t.replace("export const HANDSHAKE_KINDS", "// The three steps.\nexport const HANDSHAKE_KINDS"),
        ),
    ],
    [
      "a constant list reformatted: quotes, line breaks, trailing comma",
      (r) =>
        edit(r, "src/contract/reserved-environment.ts", (t) =>
          t.replace(/"PAPERCLIP_RUNTIME_NOTIFICATION_CONTEXT",\n/, "'PAPERCLIP_RUNTIME_NOTIFICATION_CONTEXT' ,\n\n"),
        ),
    ],
    [
      "a renamed function beside the constants",
      (r) =>
        edit(r, "src/contract/versions.ts", (t) => t.replace(/isSupportedProtocolVersion/g, "isKnownProtocolVersion")),
    ],
    [
      "a renamed generated type (its schema's title)",
      (r) => edit(r, "src/contract/generated/types.ts", (t) => t.replace(/\bPRPV1RunEventEnvelope\b/g, "RunEventV1")),
    ],
    [
      "a comment in the generated types",
      (r) =>
        edit(r, "src/contract/generated/types.ts", (t) =>
          t.replace(/^export type /m, "/** Anything at all. */\nexport type "),
        ),
    ],
  ];
  for (const [what, change] of keeps) {
    it(`is unchanged by ${what}`, () => {
      const root = copyTree();
      change(root);
      assert.equal(digestOf(root).contractDigest, BASE);
    });
  }
});

describe("contract digest: what changes it", () => {
  const changes: Array<[string, string, (root: string) => void]> = [
    [
      "a new optional field",
      RESULT,
      (r) =>
        editJson(r, RESULT, (j) => {
          j.properties.reviewer = { type: "string" };
        }),
    ],
    [
      "a changed constraint on remainingWork[].description",
      RESULT,
      (r) =>
        editJson(r, RESULT, (j) => {
          itemProperties(j).description.maxLength = 4000;
        }),
    ],
    [
      "a removed property named `description` (data, not an annotation)",
      RESULT,
      (r) =>
        editJson(r, RESULT, (j) => {
          delete itemProperties(j).description;
        }),
    ],
    [
      "a new enum value",
      "protocol/schemas/terminal.schema.json",
      (r) =>
        editJson(r, "protocol/schemas/terminal.schema.json", (j) => {
          j.properties.reportedWorkDisposition.enum.push("deferred");
        }),
    ],
    [
      "a new reserved environment key",
      "src/contract/reserved-environment.ts",
      (r) =>
        edit(r, "src/contract/reserved-environment.ts", (t) =>
          t.replace(
            '"PAPERCLIP_RUNNER_BOOTSTRAP_TICKET",',
            '"PAPERCLIP_RUNNER_BOOTSTRAP_TICKET",\n  "PAPERCLIP_RUNTIME_SANDBOX_ID",',
          ),
        ),
    ],
    [
      "a new member in a generated type",
      "src/contract/generated/types.ts",
      (r) =>
        edit(r, "src/contract/generated/types.ts", (t) =>
          t.replace('schema: "paperclip.prp.event.v1";', 'schema: "paperclip.prp.event.v1";\n  extra?: string;'),
        ),
    ],
    [
      "a changed frame limit",
      "src/contract/versions.ts",
      (r) =>
        edit(r, "src/contract/versions.ts", (t) =>
          t.replace("MAX_FRAME_BYTES = 1_048_576", "MAX_FRAME_BYTES = 2_097_152"),
        ),
    ],
  ];
  for (const [what, source, change] of changes) {
    it(`changes for ${what}, and names the source`, () => {
      const root = copyTree();
      const before = digestOf(root);
      change(root);
      const afterDigest = digestOf(root);
      assert.notEqual(afterDigest.contractDigest, BASE);
      const moved = afterDigest.sources.filter((s, i) => s.digest !== before.sources[i]!.digest).map((s) => s.source);
      assert.deepEqual(moved, [dirname(source) === "protocol/schemas" ? "protocol/schemas" : source]);
    });
  }
  it("a schema folder lists the changed file", () => {
    const root = copyTree();
    const before = digestOf(root).sources.find((s) => s.source === "protocol/schemas")!.files!;
    editJson(root, RESULT, (j) => {
      j.properties.reviewer = { type: "string" };
    });
    const afterFiles = digestOf(root).sources.find((s) => s.source === "protocol/schemas")!.files!;
    assert.deepEqual(
      afterFiles.filter((f, i) => f.digest !== before[i]!.digest).map((f) => f.path),
      [RESULT],
    );
  });
});

describe("contract digest: a missing registered source fails", () => {
  it("refuses a tree without a registered file", () => {
    const root = copyTree();
    unlinkSync(join(root, "src/contract/reserved-environment.ts"));
    const r = computeContractDigest(root);
    assert.equal(r.ok, false);
    assert.deepEqual(r.ok ? null : [r.error.code, r.error.path], [
      "source_missing",
      "src/contract/reserved-environment.ts",
    ]);
  });
  it("refuses a registered constant that is no longer declared", () => {
    const root = copyTree();
    edit(root, "src/transport/envelope.ts", (t) =>
      t.replace("export const HANDSHAKE_KINDS", "export const HANDSHAKE_STEPS"),
    );
    const r = computeContractDigest(root);
    assert.deepEqual(r.ok ? null : [r.error.code, r.error.path], [
      "source_missing",
      "src/transport/envelope.ts#HANDSHAKE_KINDS",
    ]);
    assert.match(r.ok ? "" : r.error.message, /registered contract source/);
  });
  it("refuses an empty schema folder", () => {
    const root = copyTree();
    rmSync(join(root, "protocol/provider-schemas"), { recursive: true });
    mkdirSync(join(root, "protocol/provider-schemas"));
    const r = computeContractDigest(root);
    assert.deepEqual(r.ok ? null : [r.error.code, r.error.path], ["source_missing", "protocol/provider-schemas"]);
  });
});

describe("the committed digest", () => {
  it("is this tree's (what a built runner reports)", () => {
    assert.equal(buildContractDigest(), BASE);
  });
});
