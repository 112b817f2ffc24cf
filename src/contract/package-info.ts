import { readFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "./package-root.js";

export const packageVersion = (): string => (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version;
