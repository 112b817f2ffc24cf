/**
 * `npm run generate:digest` writes protocol/contract-digest.json, the contract digest of this
 * tree and each registered source's (runtime.md §12.2); `npm run check:digest` (run by
 * `npm test`) fails when a contract change was not followed by a new digest.
 */
import { join } from "node:path";
import { computeContractDigest } from "../src/contract/fingerprint/contract-digest.js";
import { COMMITTED_DIGEST_FILE, serialiseDigest } from "../src/contract/fingerprint/committed-digest.js";
import { packageRoot } from "../src/contract/package-root.js";
import { runGenerator } from "./generator.js";

const result = computeContractDigest(packageRoot());
if (!result.ok) {
  console.error(
    `cannot compute the contract digest: ${result.error.code} at ${result.error.path}: ${result.error.message}`,
  );
  process.exit(1);
}
console.log(`contract digest ${result.value.contractDigest}`);
await runGenerator(
  process.argv.includes("--check"),
  async () => [{ path: join(packageRoot(), COMMITTED_DIGEST_FILE), text: serialiseDigest(result.value) }],
  "npm run generate:digest",
);
