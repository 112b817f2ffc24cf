/**
 * `npm run generate:api`: writes src/contract/api/generated/ (openapi.json and types.ts) from the
 * HTTP API v1's schemas (api-files.ts). With `--check`, writes nothing and fails when a committed
 * file differs from what the schemas produce.
 */
import { apiGeneratedFiles } from "./api-files.js";
import { runGenerator } from "./generator.js";

await runGenerator(process.argv.includes("--check"), apiGeneratedFiles, "npm run generate:api");
