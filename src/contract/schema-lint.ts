import { compileSchemas } from "./compile.js";
import type { SchemaFile } from "./schema-files.js";

/**
 * Keywords a contract schema may use. Kept to what every mainstream validator implements the
 * same way: no $dynamicRef/$dynamicAnchor and no unevaluated*, whose results differ between
 * implementations, so that another language's validator reaches the same verdicts as ours.
 */
export const ALLOWED_KEYWORDS = new Set([
  "$schema",
  "$id",
  "$ref",
  "$defs",
  "$comment",
  "title",
  "description",
  "examples",
  "type",
  "enum",
  "const",
  "properties",
  "required",
  "additionalProperties",
  "propertyNames",
  "maxProperties",
  "minProperties",
  "items",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "if",
  "then",
  "else",
]);

/** Keywords whose value is a map of names to subschemas; the names are not keywords. */
const SCHEMA_MAPS = new Set(["properties", "$defs"]);
const SCHEMA_LISTS = new Set(["allOf", "anyOf", "oneOf"]);
const SUBSCHEMAS = new Set(["not", "if", "then", "else", "items", "additionalProperties", "propertyNames"]);

export interface LintProblem {
  path: string;
  message: string;
}

/** Every problem of the schema set: keywords, $id uniqueness and titles, $ref resolution, ajv strict compilation. */
export function lintSchemas(files: SchemaFile[]): LintProblem[] {
  const problems: LintProblem[] = [];
  const byId = new Map<string, SchemaFile>();
  for (const file of files) {
    if (!file.id.startsWith("https://paperclip.dev/schemas/"))
      problems.push({ path: file.path, message: `$id "${file.id}" is not under https://paperclip.dev/schemas/` });
    if (!file.title) problems.push({ path: file.path, message: "schema has no title" });
    if (file.json.$schema !== "https://json-schema.org/draft/2020-12/schema")
      problems.push({ path: file.path, message: "schema is not draft 2020-12" });
    const other = byId.get(file.id);
    if (other) problems.push({ path: file.path, message: `$id "${file.id}" is also the $id of ${other.path}` });
    byId.set(file.id, file);
  }
  for (const file of files) walk(file.json, "#", file, byId, problems);
  if (problems.length === 0) {
    try {
      compileSchemas(files);
    } catch (err) {
      problems.push({ path: "(ajv)", message: (err as Error).message });
    }
  }
  return problems;
}

function walk(
  schema: unknown,
  at: string,
  file: SchemaFile,
  byId: Map<string, SchemaFile>,
  problems: LintProblem[],
): void {
  if (typeof schema === "boolean") return;
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
    problems.push({ path: `${file.path}${at}`, message: "a subschema must be an object or a boolean" });
    return;
  }
  for (const [key, value] of Object.entries(schema)) {
    const here = `${at}/${key}`;
    if (!ALLOWED_KEYWORDS.has(key)) {
      problems.push({ path: `${file.path}${here}`, message: `keyword "${key}" is not in the allowed keyword set` });
      continue;
    }
    if (key === "$ref") {
      const problem = refProblem(String(value), file, byId);
      if (problem) problems.push({ path: `${file.path}${here}`, message: problem });
    } else if (SCHEMA_MAPS.has(key)) {
      for (const [name, sub] of Object.entries(value as object)) walk(sub, `${here}/${name}`, file, byId, problems);
    } else if (SCHEMA_LISTS.has(key)) {
      (value as unknown[]).forEach((sub, i) => walk(sub, `${here}/${i}`, file, byId, problems));
    } else if (SUBSCHEMAS.has(key)) {
      walk(value, here, file, byId, problems);
    }
  }
}

/** Why a $ref does not resolve to a schema of the set, or null when it does. */
function refProblem(ref: string, file: SchemaFile, byId: Map<string, SchemaFile>): string | null {
  const url = new URL(ref, file.id);
  const target = byId.get(`${url.origin}${url.pathname}`);
  if (!target) return `$ref "${ref}" names no schema of the contract`;
  const fragment = decodeURIComponent(url.hash.replace(/^#/, ""));
  if (fragment === "") return null;
  if (!fragment.startsWith("/")) return `$ref "${ref}" uses an anchor; only JSON Pointer fragments are allowed`;
  let node: unknown = target.json;
  for (const token of fragment.slice(1).split("/")) {
    const key = token.replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object" || !(key in node))
      return `$ref "${ref}" points at nothing in ${target.path}`;
    node = (node as Record<string, unknown>)[key];
  }
  return null;
}
