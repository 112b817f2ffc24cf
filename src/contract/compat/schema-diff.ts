import {
  isObject,
  SCHEMA_ARRAY_VALUED,
  SCHEMA_MAP_VALUED,
  SCHEMA_VALUED,
  sortedJson,
  withoutAnnotations,
  type Json,
  type JsonObject,
} from "../fingerprint/schema-shape.js";
import { FIXED_EFFECTS, type Change, type ChangeKind, type Effect } from "./changes.js";

/** Upper bounds: a smaller value accepts less. */
const UPPER_LIMITS = new Set(["maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum", "maxContains"]);
/** Lower bounds: a larger value accepts less. */
const LOWER_LIMITS = new Set(["minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum", "minContains"]);
/** Keywords handled by name below; any other keyword that differs is reported as breaking both ways. */
const HANDLED = new Set([
  ...UPPER_LIMITS,
  ...LOWER_LIMITS,
  ...SCHEMA_VALUED,
  ...SCHEMA_ARRAY_VALUED,
  ...SCHEMA_MAP_VALUED,
  "type",
  "enum",
  "const",
  "required",
  "pattern",
  "$ref",
  "$id",
  "$schema",
  "default",
  "uniqueItems",
]);

interface Walk {
  schema: string;
  out: Change[];
}

function push(w: Walk, pointer: string, kind: ChangeKind, detail: string, effects?: [Effect, Effect]): void {
  const [producer, consumer] = effects ?? FIXED_EFFECTS[kind]!;
  w.out.push({ schema: w.schema, pointer, kind, detail, producer, consumer });
}

const at = (base: string, token: string | number) =>
  `${base}/${String(token).replace(/~/g, "~0").replace(/\//g, "~1")}`;
const same = (a: Json | undefined, b: Json | undefined) =>
  a === undefined ? b === undefined : b !== undefined && sortedJson(a) === sortedJson(b);
const show = (v: Json | undefined) => (v === undefined ? "(none)" : sortedJson(v));

/** Closed: a document may carry no member the schema does not name. */
const isClosed = (s: JsonObject) => s.additionalProperties === false || s.unevaluatedProperties === false;
const typeSet = (t: Json | undefined): Set<string> | undefined =>
  t === undefined ? undefined : new Set(Array.isArray(t) ? (t as string[]) : [t as string]);

/**
 * Every difference between two versions of one schema, with its effect in each direction.
 * Annotations are not compared: they are not contract (runtime.md §12.2).
 */
export function diffSchema(schema: string, oldSchema: Json, newSchema: Json): Change[] {
  const w: Walk = { schema, out: [] };
  walk(w, "", withoutAnnotations(oldSchema), withoutAnnotations(newSchema));
  return w.out;
}

function walk(w: Walk, ptr: string, a: Json, b: Json): void {
  if (same(a, b)) return;
  if (!isObject(a) || !isObject(b)) {
    // Boolean schemas: true accepts everything, false nothing.
    if (a === true || b === false) push(w, ptr, "constraint_added", `${show(a)} → ${show(b)}`);
    else if (a === false || b === true) push(w, ptr, "constraint_removed", `${show(a)} → ${show(b)}`);
    else push(w, ptr, "keyword_changed", `${show(a)} → ${show(b)}`);
    return;
  }
  objectMembers(w, ptr, a, b);
  enumValues(w, ptr, a, b);
  if (!same(a.const, b.const)) {
    if (a.const === undefined) push(w, at(ptr, "const"), "constraint_added", `const ${show(b.const)} added`);
    else if (b.const === undefined) push(w, at(ptr, "const"), "constraint_removed", `const ${show(a.const)} removed`);
    else push(w, at(ptr, "const"), "const_changed", `${show(a.const)} → ${show(b.const)}`);
  }
  types(w, ptr, a, b);
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const [x, y] = [a[key], b[key]];
    if (same(x, y)) continue;
    if (UPPER_LIMITS.has(key) || LOWER_LIMITS.has(key)) limit(w, at(ptr, key), key, x, y);
    else if (key === "pattern") {
      if (x === undefined) push(w, at(ptr, key), "limit_tightened", `pattern ${show(y)} added`);
      else if (y === undefined) push(w, at(ptr, key), "limit_loosened", `pattern ${show(x)} removed`);
      else push(w, at(ptr, key), "pattern_changed", `${show(x)} → ${show(y)}`);
    } else if (key === "$ref") push(w, at(ptr, key), "reference_changed", `${show(x)} → ${show(y)}`);
    else if (key === "additionalProperties" || key === "unevaluatedProperties") closure(w, at(ptr, key), x, y);
    else if (SCHEMA_VALUED.has(key)) walk(w, at(ptr, key), x ?? true, y ?? true);
    else if (key === "allOf")
      allOf(w, at(ptr, key), (x ?? []) as Json[], (y ?? []) as Json[], eventTypes(a), eventTypes(b));
    else if (key === "anyOf" || key === "oneOf") branches(w, at(ptr, key), (x ?? []) as Json[], (y ?? []) as Json[]);
    else if (key === "prefixItems") positional(w, at(ptr, key), (x ?? []) as Json[], (y ?? []) as Json[]);
    else if (key === "$defs" || key === "definitions") definitions(w, at(ptr, key), x, y);
    else if (key === "patternProperties" || key === "dependentSchemas") namedSchemas(w, at(ptr, key), x, y);
    else if (key === "$id" || key === "$schema" || key === "default") continue;
    else if (!HANDLED.has(key) || key === "uniqueItems") {
      const effects: [Effect, Effect] | undefined =
        key === "uniqueItems" ? (y === true ? ["breaking", "compatible"] : ["compatible", "breaking"]) : undefined;
      push(w, at(ptr, key), "keyword_changed", `${key}: ${show(x)} → ${show(y)}`, effects);
    }
  }
}

/** properties and required, judged against whether the object is open or closed. */
function objectMembers(w: Walk, ptr: string, a: JsonObject, b: JsonObject): void {
  const oldProps = (isObject(a.properties) ? a.properties : {}) as JsonObject;
  const newProps = (isObject(b.properties) ? b.properties : {}) as JsonObject;
  const oldReq = new Set((Array.isArray(a.required) ? a.required : []) as string[]);
  const newReq = new Set((Array.isArray(b.required) ? b.required : []) as string[]);
  const oldClosed = isClosed(a);
  const newClosed = isClosed(b);
  for (const name of Object.keys(newProps)) {
    const p = at(at(ptr, "properties"), name);
    if (!(name in oldProps)) {
      if (newReq.has(name))
        push(w, p, "required_property_added", `new required member ${JSON.stringify(name)}`, [
          "breaking",
          oldClosed ? "breaking" : "compatible",
        ]);
      else
        push(
          w,
          p,
          "property_added",
          `new optional member ${JSON.stringify(name)} on ${oldClosed ? "a closed" : "an open"} object`,
          ["compatible", oldClosed ? "breaking" : "compatible"],
        );
    } else walk(w, p, oldProps[name]!, newProps[name]!);
  }
  for (const name of Object.keys(oldProps)) {
    if (name in newProps) continue;
    push(
      w,
      at(at(ptr, "properties"), name),
      "property_removed",
      `member ${JSON.stringify(name)} removed from ${newClosed ? "a closed" : "an open"} object`,
      [newClosed ? "breaking" : "compatible", oldReq.has(name) ? "breaking" : "compatible"],
    );
  }
  for (const name of newReq) {
    if (!oldReq.has(name) && name in oldProps)
      push(w, at(ptr, "required"), "property_made_required", `${JSON.stringify(name)} is now required`);
    else if (!oldReq.has(name) && !(name in oldProps) && !(name in newProps))
      push(w, at(ptr, "required"), "property_made_required", `${JSON.stringify(name)} is now required`);
  }
  for (const name of oldReq) {
    if (!newReq.has(name) && name in newProps)
      push(w, at(ptr, "required"), "property_made_optional", `${JSON.stringify(name)} is no longer required`);
  }
}

function enumValues(w: Walk, ptr: string, a: JsonObject, b: JsonObject): void {
  if (same(a.enum, b.enum)) return;
  const p = at(ptr, "enum");
  if (!Array.isArray(a.enum) || !Array.isArray(b.enum)) {
    push(
      w,
      p,
      Array.isArray(b.enum) ? "constraint_added" : "constraint_removed",
      `enum ${show(a.enum)} → ${show(b.enum)}`,
    );
    return;
  }
  const eventType = ptr.endsWith("/properties/eventType");
  const oldValues = new Set(a.enum.map((v) => sortedJson(v)));
  const newValues = new Set(b.enum.map((v) => sortedJson(v)));
  for (const v of newValues)
    if (!oldValues.has(v)) push(w, p, eventType ? "event_type_added" : "enum_value_added", `${v} added`);
  for (const v of oldValues)
    if (!newValues.has(v)) push(w, p, eventType ? "event_type_removed" : "enum_value_removed", `${v} removed`);
}

function types(w: Walk, ptr: string, a: JsonObject, b: JsonObject): void {
  const [x, y] = [typeSet(a.type), typeSet(b.type)];
  if (same(a.type, b.type) || (x && y && x.size === y.size && [...x].every((t) => y.has(t)))) return;
  const p = at(ptr, "type");
  const detail = `${show(a.type)} → ${show(b.type)}`;
  if (!x) push(w, p, "type_narrowed", detail);
  else if (!y) push(w, p, "type_widened", detail);
  else if ([...x].every((t) => y.has(t) || (t === "integer" && y.has("number")))) push(w, p, "type_widened", detail);
  else if ([...y].every((t) => x.has(t) || (t === "integer" && x.has("number")))) push(w, p, "type_narrowed", detail);
  else push(w, p, "type_changed", detail);
}

function limit(w: Walk, ptr: string, key: string, x: Json | undefined, y: Json | undefined): void {
  const detail = `${key} ${show(x)} → ${show(y)}`;
  if (typeof x !== "number") return push(w, ptr, "limit_tightened", detail);
  if (typeof y !== "number") return push(w, ptr, "limit_loosened", detail);
  const tighter = UPPER_LIMITS.has(key) ? y < x : y > x;
  push(w, ptr, tighter ? "limit_tightened" : "limit_loosened", detail);
}

function closure(w: Walk, ptr: string, x: Json | undefined, y: Json | undefined): void {
  if (y === false && x !== false) push(w, ptr, "object_closed", `${show(x)} → false`);
  else if (x === false && y !== false) push(w, ptr, "object_opened", `false → ${show(y)}`);
  else walk(w, ptr, x ?? true, y ?? true);
}

/** The eventType const an `if` keys a payload binding on, when it has that shape. */
function boundEventType(entry: Json): string | undefined {
  if (!isObject(entry) || !isObject(entry.if) || !isObject(entry.if.properties)) return undefined;
  const t = entry.if.properties.eventType;
  return isObject(t) && typeof t.const === "string" ? t.const : undefined;
}

/**
 * allOf entries: each is a constraint, matched by its `if` when it has one (the payload
 * bindings), else by equal content. A new binding for a new event type accepts everything an old
 * producer wrote; a new constraint on existing documents does not.
 */
function allOf(w: Walk, ptr: string, a: Json[], b: Json[], oldTypes: Set<Json>, newTypes: Set<Json>): void {
  const keyed = (list: Json[]) => {
    // Two entries may share an `if`: the n-th of them matches the n-th on the other side.
    const seen = new Map<string, number>();
    return new Map(
      list.map((e, i) => {
        const base = isObject(e) && e.if !== undefined ? `if:${sortedJson(e.if)}` : `=${sortedJson(e)}`;
        const n = seen.get(base) ?? 0;
        seen.set(base, n + 1);
        return [`${base}#${n}`, { e, i }];
      }),
    );
  };
  const oldByKey = keyed(a);
  const newByKey = keyed(b);
  for (const [k, { e, i }] of newByKey) {
    const old = oldByKey.get(k);
    if (old) walk(w, at(ptr, i), old.e, e);
    else {
      const bound = boundEventType(e);
      if (bound !== undefined && newTypes.has(bound) && !oldTypes.has(bound))
        push(w, at(ptr, i), "payload_binding_added", `payload bound for the new event type ${bound}`);
      else
        push(
          w,
          at(ptr, i),
          "constraint_added",
          bound ? `payload binding for ${bound} added` : `allOf entry added: ${show(e)}`,
        );
    }
  }
  for (const [k, { e, i }] of oldByKey) {
    if (newByKey.has(k)) continue;
    const bound = boundEventType(e);
    push(
      w,
      at(ptr, i),
      bound !== undefined ? "payload_binding_removed" : "constraint_removed",
      bound ? `payload binding for ${bound} removed` : `allOf entry removed: ${show(e)}`,
    );
  }
}

/** A schema's eventType enum, to tell a binding for a new type from a new rule on an old one. */
const eventTypes = (s: JsonObject): Set<Json> =>
  new Set(
    isObject(s.properties) && isObject(s.properties.eventType) && Array.isArray(s.properties.eventType.enum)
      ? s.properties.eventType.enum
      : [],
  );

/** anyOf / oneOf: a new alternative accepts more, a removed one less; equal ones are matched first. */
function branches(w: Walk, ptr: string, a: Json[], b: Json[]): void {
  const oldKeys = a.map((e) => sortedJson(e));
  const newKeys = b.map((e) => sortedJson(e));
  const onlyOld = a.map((e, i) => ({ e, i })).filter(({ i }) => !newKeys.includes(oldKeys[i]!));
  const onlyNew = b.map((e, i) => ({ e, i })).filter(({ i }) => !oldKeys.includes(newKeys[i]!));
  // Alternatives changed in place: compare them pairwise in order.
  const paired = Math.min(onlyOld.length, onlyNew.length);
  for (let k = 0; k < paired; k++) walk(w, at(ptr, onlyNew[k]!.i), onlyOld[k]!.e, onlyNew[k]!.e);
  for (const { e, i } of onlyNew.slice(paired)) push(w, at(ptr, i), "branch_added", `alternative added: ${show(e)}`);
  for (const { e, i } of onlyOld.slice(paired))
    push(w, at(ptr, i), "branch_removed", `alternative removed: ${show(e)}`);
}

function positional(w: Walk, ptr: string, a: Json[], b: Json[]): void {
  for (let i = 0; i < Math.max(a.length, b.length); i++) walk(w, at(ptr, i), a[i] ?? true, b[i] ?? true);
}

function namedSchemas(w: Walk, ptr: string, x: Json | undefined, y: Json | undefined): void {
  const a = (isObject(x) ? x : {}) as JsonObject;
  const b = (isObject(y) ? y : {}) as JsonObject;
  for (const name of new Set([...Object.keys(a), ...Object.keys(b)]))
    walk(w, at(ptr, name), a[name] ?? true, b[name] ?? true);
}

/** A definition is contract only through the references to it: compare those both sides keep. */
function definitions(w: Walk, ptr: string, x: Json | undefined, y: Json | undefined): void {
  const a = (isObject(x) ? x : {}) as JsonObject;
  const b = (isObject(y) ? y : {}) as JsonObject;
  for (const name of Object.keys(b)) if (name in a) walk(w, at(ptr, name), a[name]!, b[name]!);
}
