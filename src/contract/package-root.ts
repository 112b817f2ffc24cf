import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The directory that holds this package's package.json and protocol/ folder. */
export function packageRoot(): string {
  // Walk up rather than hard-code a depth: the same module runs from src/ and from dist/src/.
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "protocol"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error("cannot find the PRP Kit package root (package.json beside protocol/)");
    dir = parent;
  }
}

export const protocolDir = (): string => join(packageRoot(), "protocol");
