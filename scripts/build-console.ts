/**
 * Builds the console's page (type-checked by `tsc -p console/web`, bundled by vite) into
 * dist/console-web, and records beside it a digest of everything it is built from. With
 * `--if-stale` it builds only when that digest has changed, so that `npm test` right after
 * `npm ci` (whose `prepare` built the page) does not build it again.
 *
 * Written by hand: vite has no up-to-date check of its own, and the inputs (the page, the
 * sources it imports, the lockfile) are hashed in well under a second.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { packageRoot } from "../src/contract/package-root.js";

const root = packageRoot();
const OUT = join(root, "dist", "console-web");
// Beside the page, not in it: the console serves that folder, and vite empties it on each build.
const STAMP = join(root, "dist", ".console-web-inputs");
/** What the page is built from: its own folder, the sources it imports (all of src/, to be safe), and the versions of its tools. */
const INPUTS = ["console/web", "src", "package-lock.json", "tsconfig.json"];
const SKIPPED = new Set(["node_modules", "dist"]);

function files(path: string): string[] {
  const full = join(root, path);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full, { withFileTypes: true })
    .filter((e) => !SKIPPED.has(e.name))
    .flatMap((e) => (e.isDirectory() ? files(`${path}/${e.name}`) : e.isFile() ? [`${path}/${e.name}`] : []));
}

/** The digest of the inputs' paths and contents, in path order. */
export function inputsDigest(): string {
  const hash = createHash("sha256");
  for (const file of INPUTS.flatMap(files).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const bytes = readFileSync(join(root, file));
    hash.update(`${file}\0${bytes.length}\0`).update(bytes);
  }
  return hash.digest("hex");
}

function run(what: string, script: string, args: string[]): void {
  const result = spawnSync(process.execPath, [join(root, "node_modules", script), ...args], {
    cwd: root,
    stdio: "inherit",
  });
  if (result.status !== 0) {
    console.error(`build-console: ${what} failed (${result.signal ?? `exit ${result.status}`})`);
    process.exit(result.status ?? 1);
  }
}

function main(argv: string[]): void {
  const digest = inputsDigest();
  const built = existsSync(join(OUT, "index.html")) && existsSync(STAMP);
  if (argv.includes("--if-stale") && built && readFileSync(STAMP, "utf8").trim() === digest) {
    console.log(`build-console: ${relative(root, OUT)} is up to date`);
    return;
  }
  run("tsc -p console/web", "typescript/bin/tsc", ["-p", "console/web"]);
  run("vite build", "vite/bin/vite.js", ["build", "--config", "console/web/vite.config.ts"]);
  writeFileSync(STAMP, `${digest}\n`);
}

main(process.argv.slice(2));
