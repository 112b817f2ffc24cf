import { readFileSync } from "node:fs";
import { join } from "node:path";
import { GOLDEN_DIR, listFixtures, loadCatalog } from "./catalog.js";
import { decode } from "./decode.js";
import { normaliseNewlines, sha256Hex } from "./digest.js";
import { loadSchemaFiles } from "./schema-files.js";
import { lintSchemas } from "./schema-lint.js";
import { MAX_PROTOCOL_VERSION } from "./versions.js";

/** `protocol/manifest.json` (wire.md §15.7). */
export interface ContractManifest {
  schema: "paperclip.prp.contract_manifest.v1";
  protocolVersion: number;
  fixtureVersion: number;
  generatedFrom: string[];
  schemas: Array<{ path: string; id: string; sha256: string }>;
  fixtures: Array<{ path: string; sha256: string; expectation: "accept" | "reject"; compatibilityCase: string }>;
}

export const MANIFEST_FILE = "manifest.json";
/** Fixtures larger than a frame (bundles, long fixtures) are still contract documents. */
const FIXTURE_MAX_BYTES = 16 * 1024 * 1024;

const digestFile = (root: string, path: string) => sha256Hex(normaliseNewlines(readFileSync(join(root, path), "utf8")));

/**
 * Builds the manifest and everything wrong with the contract on the way: schema lint problems,
 * fixtures missing from or unknown to the catalog, and fixtures whose verdict or error code is
 * not the one the catalog expects.
 */
export function buildManifest(root: string): { manifest: ContractManifest; problems: string[] } {
  const schemaFiles = loadSchemaFiles(root);
  const problems = lintSchemas(schemaFiles).map((p) => `${p.path}: ${p.message}`);
  const { entries, problems: catalogProblems } = loadCatalog(root);
  problems.push(...catalogProblems);
  const files = listFixtures(root);
  const present = new Set(files);
  for (const path of entries.keys())
    if (!present.has(path)) problems.push(`catalog lists fixtures/${path}, which does not exist`);
  const fixtures: ContractManifest["fixtures"] = [];
  for (const path of files) {
    const entry = entries.get(path);
    if (!entry) {
      problems.push(`fixtures/${path} is not in protocol/catalog.json: add its expectation and compatibilityCase`);
      continue;
    }
    if (!path.startsWith(GOLDEN_DIR)) problems.push(...verdictProblems(root, path, entry));
    fixtures.push({
      path: `fixtures/${path}`,
      sha256: digestFile(root, `fixtures/${path}`),
      expectation: entry.expectation,
      compatibilityCase: entry.compatibilityCase,
    });
  }
  const manifest: ContractManifest = {
    schema: "paperclip.prp.contract_manifest.v1",
    protocolVersion: MAX_PROTOCOL_VERSION,
    fixtureVersion: 1,
    generatedFrom: ["protocol/provider-schemas", "protocol/schemas", "protocol/fixtures"],
    schemas: schemaFiles
      .map((f) => ({ path: f.path, id: f.id, sha256: sha256Hex(f.text) }))
      .sort((a, b) => (a.path < b.path ? -1 : 1)),
    fixtures,
  };
  return { manifest, problems };
}

function verdictProblems(
  root: string,
  path: string,
  entry: { expectation: string; code?: string; kind?: string },
): string[] {
  const result = decode(readFileSync(join(root, "fixtures", path)), {
    maxBytes: FIXTURE_MAX_BYTES,
    ...(entry.kind ? { kind: entry.kind as never } : {}),
  });
  if (entry.expectation === "accept" && !result.ok) {
    return [
      `fixtures/${path} must be accepted but is rejected: ${result.error.code} at ${result.error.path || "/"}: ${result.error.message}`,
    ];
  }
  if (entry.expectation === "reject") {
    if (result.ok) return [`fixtures/${path} must be rejected (${entry.code}) but is accepted as ${result.kind}`];
    if (result.error.code !== entry.code)
      return [
        `fixtures/${path} must be rejected with ${entry.code} but fails with ${result.error.code} at ${result.error.path || "/"}: ${result.error.message}`,
      ];
  }
  return [];
}

export const serialiseManifest = (m: ContractManifest): string => `${JSON.stringify(m, null, 2)}\n`;
