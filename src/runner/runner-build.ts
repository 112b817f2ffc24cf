import { buildContractDigest } from "../contract/fingerprint/committed-digest.js";
import { packageCodeDigest, packageVersion } from "../contract/package-info.js";

/**
 * The runner build an authority expects (§5.3 step 2): the package version and the digest of
 * the build's code (packageCodeDigest). The runner reports the same two facts about itself in its hello, and
 * the contract digest it was built for (runtime.md §12.2).
 */
export const runnerBuild = (): { version: string; digest: string; contractDigest: string } => ({
  version: packageVersion(),
  digest: packageCodeDigest(),
  contractDigest: buildContractDigest(),
});
