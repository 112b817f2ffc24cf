import { statSync } from "node:fs";
import type { Command } from "commander";
import { PrpApiError, PrpClient } from "../client/index.js";
import { readFileBounded } from "../contract/bounded-read.js";
import { readCaBundle } from "../transport/ca-bundle.js";
import { CliFailure, MISCONFIGURED, refusal, STORE_FAILED } from "./authority-options.js";
import { caFetch } from "./ca-fetch.js";

export interface ApiOptions {
  api?: string;
  tokenFile?: string;
  caBundlePath?: string;
}

/** `--api URL --token-file F`: the admin commands and prp events through the HTTP API instead of the store. */
export function withApiOptions(command: Command): Command {
  return command
    .option(
      "--api <url>",
      "use the authority's HTTP API (prp authority serve --api) instead of opening its store; needs --token-file",
    )
    .option("--token-file <file>", "with --api: a file holding the API token (prp authority token create --out FILE)")
    .option(
      "--ca-bundle-path <file>",
      "with an https:// --api: PEM certificates to trust besides Node's root store (a private CA; a file only its owner can write)",
    );
}

/** A token is one line; anything longer is not a token file. */
const MAX_TOKEN_FILE_BYTES = 4096;

/**
 * The API client the options ask for, or undefined to use the store. `--api` excludes the
 * store's own options: a command that silently ignored one of them would act somewhere else.
 */
export function apiClient(opts: ApiOptions, command: Command): PrpClient | undefined {
  if (opts.api === undefined) {
    if (opts.tokenFile !== undefined) throw new CliFailure("--token-file goes with --api", MISCONFIGURED);
    if (opts.caBundlePath !== undefined) throw new CliFailure("--ca-bundle-path goes with --api", MISCONFIGURED);
    return undefined;
  }
  for (const name of ["store", "serverKeyFile"])
    if (command.getOptionValueSource(name) === "cli")
      throw new CliFailure(
        `choose --api or --${name === "store" ? "store" : "server-key-file"}, not both`,
        MISCONFIGURED,
      );
  if (!/^https?:\/\/[^/]/.test(opts.api))
    throw new CliFailure(`--api must be an http:// or https:// URL, got ${JSON.stringify(opts.api)}`, MISCONFIGURED);
  if (opts.tokenFile === undefined)
    throw new CliFailure(
      "--api needs --token-file: make one with prp authority token create --out FILE",
      MISCONFIGURED,
    );
  const token = readToken(opts.tokenFile);
  return new PrpClient({ baseUrl: opts.api, token, ...(opts.caBundlePath ? { fetch: apiFetch(opts) } : {}) });
}

/** The fetch for `--ca-bundle-path`: the bundle read and checked as prp-runnerd reads it. */
function apiFetch(opts: ApiOptions): typeof fetch {
  if (!opts.api!.startsWith("https://"))
    throw new CliFailure("--ca-bundle-path goes with an https:// --api", MISCONFIGURED);
  const bundle = readCaBundle(opts.caBundlePath!);
  if (!bundle.ok) throw new CliFailure(`${bundle.error.code}: ${bundle.error.message}`, MISCONFIGURED);
  return caFetch(bundle.value);
}

function readToken(file: string): string {
  let regular: boolean;
  try {
    regular = statSync(file).isFile();
  } catch (err) {
    throw new CliFailure(`token_unreadable: ${file}: ${(err as Error).message}`, MISCONFIGURED);
  }
  // A FIFO or a device would block or never end: a token is kept in a plain file.
  if (!regular) throw new CliFailure(`token_unreadable: ${file} is not a regular file`, MISCONFIGURED);
  const read = readFileBounded(file, { maxBytes: MAX_TOKEN_FILE_BYTES });
  if (!read.ok) throw new CliFailure(`token_unreadable: ${file}: ${read.error.message}`, MISCONFIGURED);
  const token = read.bytes.toString("utf8").trim();
  if (token === "" || /\s/.test(token))
    throw new CliFailure(`token_unreadable: ${file} does not hold one token`, MISCONFIGURED);
  return token;
}

/** Runs an API call; its refusal is the command's refusal (exit 1, `code at path: message`). */
export async function viaApi<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof PrpApiError)) throw err;
    if (err.status === 0) throw new CliFailure(`api_unreachable: ${err.message}`, STORE_FAILED);
    throw refusal({ code: err.code, path: err.path ?? "", message: err.message });
  }
}
