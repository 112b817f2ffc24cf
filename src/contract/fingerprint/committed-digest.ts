import { readFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../package-root.js";
import { CONTRACT_DIGEST_SCHEMA, type ContractDigest } from "./contract-digest.js";

/** Written by `npm run generate:digest`, checked by `npm test`; what a built runner reports. */
export const COMMITTED_DIGEST_FILE = "protocol/contract-digest.json";

export const serialiseDigest = (d: ContractDigest): string => `${JSON.stringify(d, null, 2)}\n`;

let cached: string | undefined;

/**
 * This build's contract digest, from the committed file: a deployed runner has no need to
 * recompute it, and `npm test` guarantees the file matches the tree it was built from.
 */
export function buildContractDigest(): string {
  if (cached === undefined) {
    const parsed = JSON.parse(
      readFileSync(join(packageRoot(), COMMITTED_DIGEST_FILE), "utf8"),
    ) as Partial<ContractDigest>;
    if (
      parsed.schema !== CONTRACT_DIGEST_SCHEMA ||
      typeof parsed.contractDigest !== "string" ||
      !/^sha256:[0-9a-f]{64}$/.test(parsed.contractDigest)
    ) {
      throw new Error(
        `${COMMITTED_DIGEST_FILE} is not a ${CONTRACT_DIGEST_SCHEMA} document: run \`npm run generate:digest\``,
      );
    }
    cached = parsed.contractDigest;
  }
  return cached;
}
