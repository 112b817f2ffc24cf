import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Digest } from "../contract/digest.js";
import { buildContractDigest } from "../contract/fingerprint/committed-digest.js";
import { packageRoot } from "../contract/package-root.js";
import { packageVersion } from "../contract/package-info.js";

/**
 * The runner build an authority expects (§5.3 step 2): the package version and the digest of
 * the runner's entry file. The runner reports the same two facts about itself in its hello, and
 * the contract digest it was built for (runtime.md §12.2).
 */
export const runnerBuild = (): { version: string; digest: string; contractDigest: string } => ({
  version: packageVersion(),
  digest: sha256Digest(readFileSync(join(packageRoot(), "dist/src/cli/runnerd.js"))),
  contractDigest: buildContractDigest(),
});
