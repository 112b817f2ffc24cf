import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { protocolDir } from "./package-root.js";

/** A JSON Schema file of the contract, as read from protocol/. */
export interface SchemaFile {
  /** Path relative to protocol/, forward slashes. */
  path: string;
  id: string;
  title: string;
  /** File text with CRLF normalised to LF. */
  text: string;
  json: Record<string, unknown>;
}

/** The folders under protocol/ that hold schemas, in manifest order. */
export const SCHEMA_DIRS = ["provider-schemas", "schemas"] as const;

export function loadSchemaFiles(root: string = protocolDir()): SchemaFile[] {
  const files: SchemaFile[] = [];
  for (const dir of SCHEMA_DIRS) {
    for (const name of readdirSync(join(root, dir)).sort()) {
      if (!name.endsWith(".schema.json")) continue;
      const path = `${dir}/${name}`;
      const text = readFileSync(join(root, path), "utf8").replace(/\r\n/g, "\n");
      const json = JSON.parse(text) as Record<string, unknown>;
      files.push({ path, id: String(json.$id ?? ""), title: String(json.title ?? ""), text, json });
    }
  }
  return files;
}
