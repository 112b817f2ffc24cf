import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import {
  registerSchema,
  setShouldValidateFormat,
  validate as hyperjumpValidate,
} from "@hyperjump/json-schema/draft-2020-12";
import { addFormat, setFormatHandler } from "@hyperjump/json-schema/experimental";
import { GOLDEN_DIR, loadCatalog } from "../../src/contract/catalog.js";
import { decode } from "../../src/contract/index.js";
import { DATE_TIME } from "../../src/contract/formats.js";
import { protocolDir } from "../../src/contract/package-root.js";
import { resolveKind } from "../../src/contract/prechecks.js";
import { loadSchemaFiles } from "../../src/contract/schema-files.js";
import { undiscriminatedValidator, type Kind } from "../../src/contract/kinds.js";
import { VALIDATOR_REFS, type ValidatorName } from "../../src/contract/validator-names.js";
import { validators } from "../../src/contract/validators.js";

const root = protocolDir();
const { entries } = loadCatalog(root);
const fixtures = [...entries].filter(([path]) => !path.startsWith(GOLDEN_DIR));
const bytesOf = (path: string) => readFileSync(join(root, "fixtures", path));

describe("every fixture gets the verdict and code its catalog entry gives", () => {
  it("the catalog covers the wire.md fixture catalogue", () => {
    for (const name of [
      "happy-path",
      "failed-run",
      "interrupted-run",
      "duplicate-event",
      "source-gap",
      "unknown-optional-fields",
      "unsupported-required-version",
      "budget-cost-stop-reason",
      "session-goal-v2",
      "external-provider-v3",
    ]) {
      assert.ok(entries.has(`replay/${name}.json`), name);
    }
    assert.equal(entries.get("replay/unsupported-required-version.json")?.expectation, "reject");
    assert.equal(entries.get("replay/unknown-optional-fields.json")?.expectation, "accept");
    for (const path of [
      "conformance-minimal-run.json",
      "conformance-expected-output.json",
      "evals/native-execution-seeded.json",
      "questions/codex.json",
    ])
      assert.ok(entries.has(path), path);
  });

  for (const [path, entry] of fixtures) {
    it(`${path}: ${entry.expectation}${entry.code ? ` (${entry.code})` : ""}`, () => {
      const d = decode(bytesOf(path), { maxBytes: 16 * 1024 * 1024, ...(entry.kind ? { kind: entry.kind } : {}) });
      if (entry.expectation === "accept")
        assert.ok(d.ok, d.ok ? "" : `${d.error.code} at ${d.error.path}: ${d.error.message}`);
      else {
        assert.equal(d.ok, false, "accepted, but must be rejected");
        if (!d.ok) assert.equal(d.error.code, entry.code, `${d.error.path}: ${d.error.message}`);
      }
    });
  }
});

/**
 * A second, independent validator must reach the same schema verdict as our ajv-generated one,
 * so that an ajv quirk cannot silently become the contract. Documents whose discriminator names
 * no schema have no schema verdict to compare and are covered by the test above.
 */
describe("schema verdicts agree with @hyperjump/json-schema", () => {
  before(() => {
    for (const file of loadSchemaFiles()) registerSchema(file.json as never, file.id);
    addFormat({
      id: "https://paperclip.dev/formats/date-time",
      handler: (v: unknown) => typeof v !== "string" || DATE_TIME.test(v),
    });
    setFormatHandler(
      "https://json-schema.org/keyword/draft-2020-12/format",
      "date-time",
      "https://paperclip.dev/formats/date-time",
    );
    setShouldValidateFormat(true);
  });

  const validatorFor = (value: unknown, kind: Kind | undefined): ValidatorName | undefined => {
    const plain = kind ? undiscriminatedValidator(kind) : undefined;
    if (plain) return plain;
    const resolved = resolveKind(value, kind);
    return resolved.ok ? resolved.binding.validator : undefined;
  };

  // Compiled once per schema: compiling it for every fixture made this file take most of a minute.
  const compiled = new Map<ValidatorName, ReturnType<typeof hyperjumpValidate>>();
  const theirValidator = (name: ValidatorName) => {
    let v = compiled.get(name);
    if (!v) compiled.set(name, (v = hyperjumpValidate(VALIDATOR_REFS[name])));
    return v;
  };

  let compared = 0;
  for (const [path, entry] of fixtures) {
    const value = JSON.parse(bytesOf(path).toString("utf8"));
    const name = validatorFor(value, entry.kind);
    if (name === undefined) continue;
    it(`${path} against ${name}`, async () => {
      compared++;
      const ours = validators[name](value) === true;
      const theirs = (await theirValidator(name))(value).valid;
      assert.equal(
        theirs,
        ours,
        `ajv says ${ours ? "valid" : "invalid"}, hyperjump says ${theirs ? "valid" : "invalid"}`,
      );
    });
  }
  it("compared most fixtures", () => assert.ok(compared >= fixtures.length * 0.8, `${compared} of ${fixtures.length}`));
});
