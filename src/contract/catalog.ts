import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ContractErrorCode } from "./errors.js";
import { isKind, type Kind } from "./kinds.js";

/** What a fixture is expected to do, as protocol/catalog.json records it (wire.md §15.7). */
export interface CatalogEntry {
  expectation: "accept" | "reject";
  compatibilityCase: string;
  /** The error code a rejected fixture must fail with. */
  code?: ContractErrorCode;
  /** The kind to decode as, for documents without a discriminator. */
  kind?: Kind;
}

export const COMPATIBILITY_CASES = new Set([
  "canonical",
  "cross-language-input",
  "cross-language-output",
  "deterministic-replay-oracle",
  "additive-optional-fields",
  "unknown-required-version",
  "invalid-required-payload",
  "codex-structured-input",
  "acpx-structured-input",
  "opencode-structured-input",
]);

/** Goldens are reducer oracles checked byte for byte by the golden check, not decoded here. */
export const GOLDEN_DIR = "replay/golden/";
const GOLDEN: CatalogEntry = { expectation: "accept", compatibilityCase: "deterministic-replay-oracle" };

export const CATALOG_FILE = "catalog.json";

/** Every fixture file under protocol/fixtures, relative to it, sorted by code point. */
export function listFixtures(protocolRoot: string): string[] {
  const out: string[] = [];
  const visit = (rel: string) => {
    const dir = join(protocolRoot, "fixtures", rel);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith(".json")) out.push(path);
    }
  };
  if (existsSync(join(protocolRoot, "fixtures"))) visit("");
  return out.sort();
}

/** The catalog entries, with every golden file implied; problems name malformed entries. */
export function loadCatalog(protocolRoot: string): { entries: Map<string, CatalogEntry>; problems: string[] } {
  const raw = JSON.parse(readFileSync(join(protocolRoot, CATALOG_FILE), "utf8")) as {
    fixtures?: Record<string, CatalogEntry>;
  };
  const entries = new Map<string, CatalogEntry>();
  const problems: string[] = [];
  for (const [path, entry] of Object.entries(raw.fixtures ?? {})) {
    if (entry.expectation !== "accept" && entry.expectation !== "reject")
      problems.push(`${path}: expectation must be accept or reject`);
    if (!COMPATIBILITY_CASES.has(entry.compatibilityCase))
      problems.push(`${path}: unknown compatibilityCase "${entry.compatibilityCase}"`);
    if (entry.expectation === "reject" && !entry.code)
      problems.push(`${path}: a reject entry must name the error code it fails with`);
    if (entry.kind !== undefined && !isKind(entry.kind)) problems.push(`${path}: unknown kind "${entry.kind}"`);
    entries.set(path, entry);
  }
  for (const path of listFixtures(protocolRoot)) if (path.startsWith(GOLDEN_DIR)) entries.set(path, GOLDEN);
  return { entries, problems };
}
