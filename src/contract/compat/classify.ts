import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { registeredSourceDigest } from "../fingerprint/contract-digest.js";
import { REGISTERED_SOURCES } from "../fingerprint/registry.js";
import { isObject, type Json } from "../fingerprint/schema-shape.js";
import { breaksIn, FIXED_EFFECTS, type Change, type Direction } from "./changes.js";
import { diffSchema } from "./schema-diff.js";

/** A change to a whole schema or source, with its kind's fixed effects. */
function whole(
  schema: string,
  kind: "schema_added" | "schema_removed" | "code_source_changed",
  detail: string,
): Change {
  const [producer, consumer] = FIXED_EFFECTS[kind]!;
  return { schema, pointer: "", kind, detail, producer, consumer };
}

/** Every schema of a tree by `$id`, from the registered schema folders that exist in it. */
function schemasById(root: string): Map<string, Json> {
  const out = new Map<string, Json>();
  for (const source of REGISTERED_SOURCES) {
    if (source.kind !== "schemas" || !existsSync(join(root, source.path))) continue;
    for (const name of readdirSync(join(root, source.path))
      .filter((n) => n.endsWith(".schema.json"))
      .sort()) {
      const json = JSON.parse(readFileSync(join(root, source.path, name), "utf8")) as Json;
      out.set(isObject(json) && typeof json.$id === "string" ? json.$id : `${source.path}/${name}`, json);
    }
  }
  return out;
}

/**
 * The registered code sources (key lists, limits) that differ between two trees. They have no
 * schema to reason about, so a difference counts as breaking both ways: the classifier fails
 * closed where it cannot judge. The generated types are left out: they follow the schemas.
 */
function codeSourceChanges(oldRoot: string, newRoot: string): Change[] {
  const out: Change[] = [];
  for (const source of REGISTERED_SOURCES) {
    if (source.kind !== "constants") continue;
    const [a, b] = [registeredSourceDigest(oldRoot, source), registeredSourceDigest(newRoot, source)];
    if (a.ok && b.ok && a.value.digest === b.value.digest) continue;
    if (!a.ok && !b.ok) continue;
    const detail = !a.ok
      ? "registered source added"
      : !b.ok
        ? "registered source removed"
        : "registered key list or limit changed";
    out.push(whole(source.path, "code_source_changed", `${detail} (not classified: counted as breaking)`));
  }
  return out;
}

/** Every change from the old contract tree to the new one, schemas by `$id`, in a stable order. */
export function diffContracts(oldRoot: string, newRoot: string): Change[] {
  const [a, b] = [schemasById(oldRoot), schemasById(newRoot)];
  const out: Change[] = [];
  for (const id of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const [x, y] = [a.get(id), b.get(id)];
    if (x === undefined) out.push(whole(id, "schema_added", "new schema"));
    else if (y === undefined) out.push(whole(id, "schema_removed", "schema removed"));
    else out.push(...diffSchema(id, x, y));
  }
  out.push(...codeSourceChanges(oldRoot, newRoot));
  return out;
}

export interface Verdict {
  direction: Direction;
  compatible: boolean;
  breaking: Change[];
}

export const verdict = (changes: readonly Change[], direction: Direction): Verdict => {
  const breaking = changes.filter((c) => breaksIn(c, direction));
  return { direction, compatible: breaking.length === 0, breaking };
};
