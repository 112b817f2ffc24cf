import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { packageRoot } from "../../src/contract/package-root.js";

/**
 * The fuzz tests' one seed: fixed by default so CI is repeatable, `PRP_FUZZ_SEED` to explore
 * (every test prints the seed it used). `PRP_FUZZ_SCALE` multiplies the number of cases.
 */
export const FUZZ_SEED = Number(process.env.PRP_FUZZ_SEED ?? 20261130);
const SCALE = Number(process.env.PRP_FUZZ_SCALE ?? 1);

/** fast-check parameters: seeded, `runs` cases times the scale, and never longer than `budgetMs`. */
export function fuzzParameters(runs: number, budgetMs: number): fc.Parameters<unknown> {
  return {
    seed: FUZZ_SEED,
    numRuns: Math.max(1, Math.round(runs * SCALE)),
    interruptAfterTimeLimit: budgetMs * SCALE,
    markInterruptAsFailure: false,
  };
}

/** Runs a property, prints the seed and the count, and fails with fast-check's own report. */
export async function fuzz(
  label: string,
  property: Parameters<typeof fc.check>[0],
  runs: number,
  budgetMs: number,
): Promise<void> {
  const details = await fc.check(property, fuzzParameters(runs, budgetMs));
  console.log(
    `# fuzz ${label}: seed ${FUZZ_SEED}, ${details.numRuns} cases${details.interrupted ? " (time budget reached)" : ""}`,
  );
  if (!details.failed) return;
  const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(`${fc.defaultReportMessage(details) ?? `fuzz ${label} failed (seed ${FUZZ_SEED})`}\nCause: ${cause}`);
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Valid documents to mutate: every command and event of the replay fixtures the catalog accepts. */
export function validDocuments(): { commands: Record<string, Json>[]; events: Record<string, Json>[] } {
  const root = join(packageRoot(), "protocol");
  const catalog = JSON.parse(readFileSync(join(root, "catalog.json"), "utf8")).fixtures as Record<
    string,
    { expectation: string }
  >;
  const commands: Record<string, Json>[] = [];
  const events: Record<string, Json>[] = [];
  for (const name of readdirSync(join(root, "fixtures/replay"))) {
    if (!name.endsWith(".json") || catalog[`replay/${name}`]?.expectation !== "accept") continue;
    const fixture = JSON.parse(readFileSync(join(root, "fixtures/replay", name), "utf8"));
    commands.push(...(fixture.commands ?? []));
    events.push(...(fixture.events ?? []));
  }
  return { commands, events };
}

/** Strings a hostile peer sends: lone surrogates, controls, a `__proto__`, very long text. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("\ud800", "a\udfffb", "\ud83d", "\u0000", "\u2028", "__proto__", "constructor", ""),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.integer({ min: 1, max: 70_000 }).map((n) => "x".repeat(n)),
);

/** Values that strain a decoder: deep nesting, more than 10,000 values, huge or odd numbers. */
export const hostileValue: fc.Arbitrary<Json> = fc.oneof(
  hostileString,
  fc.constantFrom<Json>(1e308, -0, 2 ** 53 + 1, 0.1, -1, null, true, [], {}),
  fc.integer({ min: 1, max: 120 }).map((depth) => JSON.parse("[".repeat(depth) + "]".repeat(depth)) as Json),
  fc.integer({ min: 9_990, max: 12_000 }).map((n) => new Array<Json>(n).fill(0)),
  fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>,
);

/** Every path into a JSON value, as key lists (the root is []). */
function pathsOf(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  const paths = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => paths.push(...pathsOf(v, [...prefix, i])));
  else if (value !== null && typeof value === "object")
    for (const [k, v] of Object.entries(value)) paths.push(...pathsOf(v, [...prefix, k]));
  return paths;
}

function edit(
  value: Json,
  path: (string | number)[],
  change: (parent: Json[] | Record<string, Json>, key: string | number) => void,
): Json {
  const copy = structuredClone(value);
  let parent: any = copy;
  for (const key of path.slice(0, -1)) parent = parent[key];
  change(parent, path.at(-1)!);
  return copy;
}

/** A valid document with one value replaced, removed, or a key added where it sits. */
export function mutatedValue(doc: Record<string, Json>): fc.Arbitrary<Json> {
  const paths = pathsOf(doc).filter((p) => p.length > 0);
  return fc
    .tuple(fc.constantFrom(...paths), fc.constantFrom("replace", "remove", "add"), hostileValue, hostileString)
    .map(([path, op, value, key]) =>
      edit(doc, path, (parent, last) => {
        if (op === "replace") (parent as any)[last] = value;
        else if (Array.isArray(parent)) parent.splice(Number(last), 1);
        else if (op === "remove") delete parent[last as string];
        else Object.defineProperty(parent, key, { value, enumerable: true, writable: true, configurable: true });
      }),
    );
}

/** A valid document's text cut, with a byte flipped, a key repeated, or `__proto__` slipped in. */
export function mutatedText(doc: Record<string, Json>): fc.Arbitrary<string> {
  const text = JSON.stringify(doc);
  const keys = Object.keys(doc);
  return fc.oneof(
    fc.nat(text.length).map((at) => text.slice(0, at)),
    fc
      .tuple(fc.nat(text.length - 1), fc.integer({ min: 0, max: 0xff }))
      .map(([at, code]) => text.slice(0, at) + String.fromCharCode(code) + text.slice(at + 1)),
    fc
      .tuple(fc.constantFrom(...keys), hostileValue)
      .map(([key, value]) => `{${JSON.stringify(key)}:${JSON.stringify(value)},${text.slice(1)}`),
    fc.constantFrom(`{"__proto__":{"admin":true},${text.slice(1)}`, `${text.slice(0, -1)},"__proto__":null}`),
  );
}

/** Random bytes, some of them not UTF-8. */
export const randomBytes: fc.Arbitrary<Uint8Array> = fc.uint8Array({ maxLength: 2048 });
