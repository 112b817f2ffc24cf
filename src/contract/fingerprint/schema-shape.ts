/**
 * Where JSON Schema 2020-12 puts subschemas. Both the contract digest (to strip annotations)
 * and the compatibility classifier (to walk two schemas side by side) must know which member
 * names are keywords and which are data: a property *named* `description` under `properties`
 * is contract, a `description` keyword beside `type` is not.
 */

/** Keywords whose value is one subschema. */
export const SCHEMA_VALUED = new Set([
  "additionalProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "items",
  "additionalItems",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
]);
/** Keywords whose value is an array of subschemas. */
export const SCHEMA_ARRAY_VALUED = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);
/** Keywords whose value maps names (data) to subschemas. */
export const SCHEMA_MAP_VALUED = new Set([
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
]);

/** Annotation keywords: text for people, no effect on what a document may contain (runtime.md §12.2). */
export const ANNOTATION_KEYWORDS = new Set(["description", "title", "$comment", "examples"]);

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

/** A schema with every annotation keyword removed, at every schema position and nowhere else. */
export function withoutAnnotations(schema: Json): Json {
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (ANNOTATION_KEYWORDS.has(key)) continue;
    if (SCHEMA_VALUED.has(key))
      out[key] = Array.isArray(value) ? value.map(withoutAnnotations) : withoutAnnotations(value);
    else if (SCHEMA_ARRAY_VALUED.has(key) && Array.isArray(value)) out[key] = value.map(withoutAnnotations);
    else if (SCHEMA_MAP_VALUED.has(key) && isObject(value))
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, withoutAnnotations(sub)]));
    else out[key] = value;
  }
  return out;
}

/**
 * JSON with object members sorted by code unit and no whitespace (runtime.md §12.3's canonical
 * JSON). Not `canonicalJson` from the codec: that one bounds a wire document at 10,000 values,
 * and a whole schema is not a wire document.
 */
export function sortedJson(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedJson(value[k]!)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
