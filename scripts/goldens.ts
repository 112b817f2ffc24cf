/**
 * `npm run generate:goldens` writes protocol/fixtures/replay/golden/: a snapshot and a parity
 * summary for every accepted replay fixture, and removes goldens no accepted fixture produces.
 * `npm run check:goldens` (run by `npm test`) writes nothing and fails on any difference. After
 * regenerating, refresh the manifest, which lists every golden (`npm run generate:manifest`).
 */
import { rmSync } from "node:fs";
import { relative } from "node:path";
import { packageRoot, protocolDir } from "../src/contract/package-root.js";
import { runGenerator } from "./generator.js";
import { orphanGoldens, replayGoldenFiles } from "./replay-goldens.js";

const check = process.argv.includes("--check");
const root = protocolDir();
const files = replayGoldenFiles(root);
const orphans = orphanGoldens(root, files);
if (orphans.length > 0) {
  const names = orphans.map((path) => relative(packageRoot(), path)).join(", ");
  if (check) {
    console.error(
      `goldens without an accepted replay fixture: ${names}\nrun \`npm run generate:goldens\` and commit the result`,
    );
    process.exit(1);
  }
  for (const path of orphans) rmSync(path);
  console.log(`removed ${names}`);
}
await runGenerator(check, async () => files, "npm run generate:goldens && npm run generate:manifest");
