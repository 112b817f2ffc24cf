/**
 * `npm run generate:manifest` writes protocol/manifest.json; `npm run check:manifest` (run by
 * `npm test`) writes nothing and fails on any drift, any schema that does not lint or compile,
 * and any fixture whose verdict differs from its catalog expectation.
 */
import { join } from "node:path";
import { buildManifest, MANIFEST_FILE, serialiseManifest } from "../src/contract/manifest.js";
import { protocolDir } from "../src/contract/package-root.js";
import { runGenerator } from "./generator.js";

const args = process.argv.slice(2);
const check = args.includes("--check");
// --protocol DIR checks another copy of protocol/ (the tests use it on a modified copy).
const at = args.indexOf("--protocol");
const root = at >= 0 && args[at + 1] ? args[at + 1]! : protocolDir();
const { manifest, problems } = buildManifest(root);
if (problems.length > 0) {
  console.error(`the contract has ${problems.length} problem(s):\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  process.exit(1);
}
console.log(
  `${manifest.schemas.length} schemas compile and lint; ${manifest.fixtures.length} fixtures have their expected verdicts`,
);
await runGenerator(
  check,
  async () => [{ path: join(root, MANIFEST_FILE), text: serialiseManifest(manifest) }],
  "npm run generate:manifest",
);
