import { InvalidArgumentError } from "commander";
import { isSupportedProtocolVersion, SUPPORTED_RANGE_TEXT } from "../contract/versions.js";
import { MAX_SEED } from "../fault/seeded-random.js";

/** commander parsers that refuse bad numbers with a message, instead of passing NaN on. */
export function parseNonNegativeInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new InvalidArgumentError(`expected a whole number ≥ 0, got "${value}"`);
  return n;
}

export function parsePositiveInt(value: string): number {
  const n = parseNonNegativeInt(value);
  if (n === 0) throw new InvalidArgumentError("expected a whole number ≥ 1, got 0");
  return n;
}

/** A seed is an unsigned 32-bit integer. */
export function parseSeed(value: string): number {
  const n = parseNonNegativeInt(value);
  if (n > MAX_SEED) throw new InvalidArgumentError(`a seed is at most ${MAX_SEED}, got ${value}`);
  return n;
}

/** `--harness-ready-ms` of the commands that start prp-runnerd. */
export const HARNESS_READY_HELP =
  "passed to prp-runnerd: how long the harness has to say ready (default the protocol's 2 s, longer for an ACP agent); a loaded machine may need more";

/** The prp-runnerd flag for `--harness-ready-ms`, only when given: otherwise the runner's own default holds. */
export const harnessReadyArgs = (ms: number | undefined): string[] =>
  ms === undefined ? [] : ["--harness-ready-ms", String(ms)];

/** A PRP protocol version this project supports (wire.md D2). */
export function parseProtocolVersion(value: string): number {
  const n = parseNonNegativeInt(value);
  if (!isSupportedProtocolVersion(n))
    throw new InvalidArgumentError(`expected a protocol version in ${SUPPORTED_RANGE_TEXT}, got ${value}`);
  return n;
}

/** `HOST:PORT` (IPv6 in brackets); port 0 takes any free port. */
export function parseListen(value: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+):(\d{1,5})$/.exec(value);
  const port = Number(m?.[2]);
  if (!m || port > 65_535) throw new InvalidArgumentError(`expected HOST:PORT (e.g. 127.0.0.1:0), got "${value}"`);
  return { host: m[1]!.replace(/^\[(.*)\]$/, "$1"), port };
}
