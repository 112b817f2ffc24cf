import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { packageRoot } from "./package-root.js";

export const packageVersion = (): string =>
  (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version;

let buildDigest: string | undefined;

/**
 * The digest of this build's code: every compiled module under dist/src, in path order, each
 * framed by its path and length. Not prp-runnerd's entry file alone: that is a thin shell over
 * startRunner, so a changed runner would keep its digest. The build does not change while a
 * process runs, so it is read once.
 */
export function packageCodeDigest(): string {
  if (buildDigest !== undefined) return buildDigest;
  const root = join(packageRoot(), "dist", "src");
  const files = (readdirSync(root, { recursive: true, withFileTypes: true }) as import("node:fs").Dirent[])
    .filter((e) => e.isFile() && /\.(?:c?js)$/.test(e.name))
    .map((e) => relative(root, join(e.parentPath ?? e.path, e.name)))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const hash = createHash("sha256");
  for (const file of files) {
    const bytes = readFileSync(join(root, file));
    hash.update(`${file}\0${bytes.length}\0`).update(bytes);
  }
  buildDigest = `sha256:${hash.digest("hex")}`;
  return buildDigest;
}
