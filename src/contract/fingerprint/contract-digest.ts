import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { sha256Digest } from "../digest.js";
import { constantDeclaration, typeShapes } from "./code-shapes.js";
import { REGISTERED_SOURCES, type RegisteredSource } from "./registry.js";
import { sortedJson, withoutAnnotations, type Json } from "./schema-shape.js";
import { tokenize, tokenText, TokenError, type Token } from "./ts-tokens.js";

export const CONTRACT_DIGEST_SCHEMA = "paperclip.prp.contract_digest.v1";

/** One registered source's digest; a schema folder also lists each file's. */
export interface SourceDigest {
  source: string;
  kind: RegisteredSource["kind"];
  digest: string;
  files?: Array<{ path: string; digest: string }>;
}

export interface ContractDigest {
  schema: typeof CONTRACT_DIGEST_SCHEMA;
  contractDigest: string;
  sources: SourceDigest[];
}

export interface DigestError {
  code: "source_missing" | "source_unreadable";
  path: string;
  message: string;
}

export type DigestResult = { ok: true; value: ContractDigest } | { ok: false; error: DigestError };

class SourceFailure extends Error {
  constructor(readonly error: DigestError) {
    super(error.message);
  }
}

const missing = (path: string, what: string): never => {
  throw new SourceFailure({
    code: "source_missing",
    path,
    message: `${what} is a registered contract source but is missing: restore it, or change the registry (src/contract/fingerprint/registry.ts) on purpose`,
  });
};

function readText(root: string, path: string): string {
  const file = join(root, path);
  if (!existsSync(file)) missing(path, path);
  return readFileSync(file, "utf8").replace(/\r\n/g, "\n");
}

function tokens(root: string, path: string): Token[] {
  try {
    return tokenize(readText(root, path));
  } catch (e) {
    if (e instanceof TokenError)
      throw new SourceFailure({ code: "source_unreadable", path, message: `${path}: ${e.message}` });
    throw e;
  }
}

function schemaFolder(root: string, path: string): SourceDigest {
  const dir = join(root, path);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) missing(path, `the folder ${path}`);
  const files = readdirSync(dir)
    .filter((n) => n.endsWith(".schema.json"))
    .sort();
  if (files.length === 0) missing(path, `the schemas in ${path}`);
  const digests = files.map((name) => {
    const filePath = `${path}/${name}`;
    let json: Json;
    try {
      json = JSON.parse(readText(root, filePath)) as Json;
    } catch (e) {
      throw new SourceFailure({
        code: "source_unreadable",
        path: filePath,
        message: `${filePath} is not JSON: ${(e as Error).message}`,
      });
    }
    return { path: filePath, digest: sha256Digest(sortedJson(withoutAnnotations(json))) };
  });
  return { source: path, kind: "schemas", digest: sha256Digest(sortedJson(digests)), files: digests };
}

function sourceDigest(root: string, source: RegisteredSource): SourceDigest {
  switch (source.kind) {
    case "schemas":
      return schemaFolder(root, source.path);
    case "types":
      return {
        source: source.path,
        kind: source.kind,
        digest: sha256Digest(tokenText(typeShapes(tokens(root, source.path)))),
      };
    case "constants": {
      const all = tokens(root, source.path);
      const parts = source.names.map((name) => {
        const declaration = constantDeclaration(all, name);
        if (declaration === undefined)
          return missing(`${source.path}#${name}`, `the constant ${name} in ${source.path}`);
        return [name, tokenText(declaration)];
      });
      return { source: source.path, kind: source.kind, digest: sha256Digest(sortedJson(parts as Json)) };
    }
  }
}

/** One registered source's digest, or why it cannot be computed. */
export function registeredSourceDigest(
  root: string,
  source: RegisteredSource,
): { ok: true; value: SourceDigest } | { ok: false; error: DigestError } {
  try {
    return { ok: true, value: sourceDigest(root, source) };
  } catch (e) {
    if (e instanceof SourceFailure) return { ok: false, error: e.error };
    throw e;
  }
}

/**
 * The contract digest of the package tree at `root` (runtime.md §12.2): equal digests mean the
 * same wire contract, whatever the comments, formatting, annotations or type names.
 */
export function computeContractDigest(
  root: string,
  registry: readonly RegisteredSource[] = REGISTERED_SOURCES,
): DigestResult {
  try {
    const sources = registry.map((s) => sourceDigest(root, s));
    const summary = sources.map((s) => [s.source, s.digest]);
    return {
      ok: true,
      value: {
        schema: CONTRACT_DIGEST_SCHEMA,
        contractDigest: sha256Digest(sortedJson([CONTRACT_DIGEST_SCHEMA, summary] as Json)),
        sources,
      },
    };
  } catch (e) {
    if (e instanceof SourceFailure) return { ok: false, error: e.error };
    throw e;
  }
}
