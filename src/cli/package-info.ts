import { readFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../contract/package-root.js";

export const packageVersion = (): string => (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version;
