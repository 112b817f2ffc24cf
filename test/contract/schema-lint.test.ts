import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { loadSchemaFiles, type SchemaFile } from "../../src/contract/schema-files.js";
import { lintSchemas } from "../../src/contract/schema-lint.js";

const schema = (id: string, body: Record<string, unknown>): SchemaFile => {
  const json = { $schema: "https://json-schema.org/draft/2020-12/schema", $id: id, title: "T", ...body };
  return { path: id.split("/").pop()!, id, title: String(json.title), text: JSON.stringify(json), json };
};
const ID = "https://paperclip.dev/schemas/prp/v1/";

describe("schema lint", () => {
  it("passes for the contract's schemas, all 2020-12, titled, with unique $ids", () => {
    const files = loadSchemaFiles();
    assert.ok(files.length >= 30);
    assert.deepEqual(lintSchemas(files), []);
    assert.equal(new Set(files.map((f) => f.id)).size, files.length);
  });

  it("refuses keywords outside the allowed set", () => {
    for (const keyword of ["$dynamicRef", "unevaluatedProperties", "unevaluatedItems"]) {
      const problems = lintSchemas([schema(`${ID}a.json`, { type: "object", properties: { x: { [keyword]: "#" } } })]);
      assert.ok(
        problems.some((p) => p.message.includes(`"${keyword}"`)),
        keyword,
      );
    }
  });

  it("refuses a $ref that resolves to nothing", () => {
    const problems = lintSchemas([
      schema(`${ID}a.json`, { $ref: `${ID}b.json` }),
      schema(`${ID}c.json`, { $ref: "#/$defs/missing" }),
    ]);
    assert.equal(problems.length, 2);
    assert.ok(problems.every((p) => p.message.includes("$ref")));
  });

  it("refuses duplicate $ids, missing titles and schemas that fail ajv strict mode", () => {
    const a = schema(`${ID}a.json`, { type: "object" });
    assert.ok(lintSchemas([a, { ...a, path: "copy.json" }]).some((p) => p.message.includes("also the $id")));
    assert.ok(lintSchemas([{ ...a, title: "" }]).some((p) => p.message.includes("no title")));
    assert.ok(
      lintSchemas([schema(`${ID}s.json`, { properties: { x: { minLength: 1 } } })]).some(
        (p) => p.path === "(ajv)" && /strict mode/.test(p.message),
      ),
    );
  });
});
