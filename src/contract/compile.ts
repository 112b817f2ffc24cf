import Ajv2020Module from "ajv/dist/2020.js";
import type { Options } from "ajv";
import { DATE_TIME } from "./formats.js";
import type { SchemaFile } from "./schema-files.js";

const Ajv2020 = Ajv2020Module.default;
export type AjvInstance = InstanceType<typeof Ajv2020>;

/**
 * The one set of ajv options the contract is compiled with, for the generated standalone
 * validators and for every check that compiles the schemas. Strict mode, except strictRequired:
 * the seed result schema (seed 003) requires `blocker` inside an if/then branch that does not
 * redeclare it, which is valid JSON Schema and must stay byte-for-byte as seeded.
 */
export function ajvOptions(forStandalone: boolean): Options {
  return {
    strict: true,
    strictRequired: false,
    allowUnionTypes: true,
    allErrors: false,
    // Share one compiled function per referenced schema instead of inlining it at every use.
    inlineRefs: false,
    // The date-time format is a RegExp, which standalone code embeds as a literal: the
    // generated module needs no import of ours at run time.
    ...(forStandalone ? { code: { source: true } } : {}),
  };
}

/** An ajv instance holding every contract schema. Throws on the first schema that does not compile. */
export function compileSchemas(files: SchemaFile[], forStandalone = false): AjvInstance {
  const ajv = new Ajv2020(ajvOptions(forStandalone));
  ajv.addFormat("date-time", DATE_TIME);
  for (const file of files) ajv.addSchema(file.json, file.id);
  for (const file of files) ajv.getSchema(file.id); // compile now so a broken schema fails here
  return ajv;
}
