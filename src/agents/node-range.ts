import type { Outcome } from "../contract/result.js";

/** `>=N`, `>=N.M` or `>=N.M.P`: the only forms the catalog's `launch.node` uses. */
const AT_LEAST = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/;

const parts = (version: string): number[] => {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [];
};

/**
 * Whether Node `version` (process.version) is in `range`. Only lower bounds are read (no semver
 * library is a dependency, and the catalog needs no more); any other form is refused, saying so,
 * rather than guessed at.
 */
export function nodeSatisfies(range: string, version: string): Outcome<boolean, string> {
  const m = AT_LEAST.exec(range.trim());
  const have = parts(version);
  if (!m) return { ok: false, error: `the range "${range}" is not one this check reads (>=N, >=N.M or >=N.M.P)` };
  if (have.length === 0) return { ok: false, error: `"${version}" is not a Node version` };
  const want = [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
  for (let i = 0; i < 3; i++) if (have[i] !== want[i]) return { ok: true, value: have[i]! > want[i]! };
  return { ok: true, value: true };
}
