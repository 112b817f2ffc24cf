import { existsSync } from "node:fs";
import { join } from "node:path";
import { readFileBounded, type ReadError } from "../contract/bounded-read.js";
import { decode } from "../contract/decode.js";
import type { ContractError } from "../contract/errors.js";
import { protocolDir } from "../contract/package-root.js";
import type { Script } from "./fake-harness.js";

/** Scripts can hold large test payloads (the oversized-line scenario); they are files, not frames. */
const MAX_SCRIPT_BYTES = 64 * 1024 * 1024;

export const scenariosDir = (): string => join(protocolDir(), "fixtures/local-runner/scripts");

/** A script named by file path, or by scenario name (protocol/fixtures/local-runner/scripts/NAME.json). */
export function resolveScriptPath(nameOrFile: string): string {
  if (existsSync(nameOrFile)) return nameOrFile;
  const scenario = join(scenariosDir(), `${nameOrFile}.json`);
  if (/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(nameOrFile) && existsSync(scenario)) return scenario;
  throw new Error(`no script file or scenario named "${nameOrFile}" (scenarios are in ${scenariosDir()})`);
}

export interface LoadedScript {
  path: string;
  bytes: Buffer;
  script: Script;
}

/** Reads and decodes a script; a refused script is a typed error value. */
export function loadScript(
  path: string,
): { ok: true; value: LoadedScript } | { ok: false; error: ContractError | ReadError } {
  const read = readFileBounded(path, { maxBytes: MAX_SCRIPT_BYTES });
  if (!read.ok) return read;
  const bytes = read.bytes;
  const d = decode(bytes, { kind: "fake-harness-script", maxBytes: MAX_SCRIPT_BYTES });
  return d.ok ? { ok: true, value: { path, bytes, script: d.value } } : d;
}
