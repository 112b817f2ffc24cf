import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { COMMITTED_DIGEST_FILE, serialiseDigest } from "../../src/contract/fingerprint/committed-digest.js";
import { computeContractDigest } from "../../src/contract/fingerprint/contract-digest.js";
import { REGISTERED_SOURCES } from "../../src/contract/fingerprint/registry.js";
import { packageRoot } from "../../src/contract/package-root.js";

/** Copies of this package's registered contract sources, each to change one thing in; removed by `cleanup`. */
export class ContractTrees {
  private readonly made: string[] = [];

  track(dir: string): void {
    this.made.push(dir);
  }

  copy(): string {
    const root = mkdtempSync(join(tmpdir(), "prp-contract-copy-"));
    this.made.push(root);
    for (const s of REGISTERED_SOURCES) {
      mkdirSync(dirname(join(root, s.path)), { recursive: true });
      cpSync(join(packageRoot(), s.path), join(root, s.path), { recursive: true });
    }
    return root;
  }

  cleanup(): void {
    for (const d of this.made.splice(0)) rmSync(d, { recursive: true, force: true });
  }
}

/** Rewrites one file; fails when the edit changed nothing, which would make the test prove nothing. */
export function editText(root: string, path: string, change: (text: string) => string): void {
  const file = join(root, path);
  const before = readFileSync(file, "utf8");
  const after = change(before);
  assert.notEqual(after, before, `the edit to ${path} changed nothing: the test would prove nothing`);
  writeFileSync(file, after);
}

export const editJson = (root: string, path: string, change: (json: any) => void, indent: number | string = 2): void =>
  editText(root, path, (text) => {
    const json = JSON.parse(text);
    change(json);
    return JSON.stringify(json, null, indent);
  });

/**
 * A second installation of this package (bin, dist, protocol, src; node_modules linked): a
 * runner "from another image". `change` edits its contract; its committed digest is then
 * recomputed, as `npm run generate:digest` would in that build.
 */
export function installCopy(trees: { track: (dir: string) => void }, change: (root: string) => void): string {
  const root = mkdtempSync(join(tmpdir(), "prp-install-"));
  trees.track(root);
  for (const part of ["bin", "dist", "protocol", "src", "package.json"])
    cpSync(join(packageRoot(), part), join(root, part), { recursive: true });
  symlinkSync(join(packageRoot(), "node_modules"), join(root, "node_modules"));
  change(root);
  const digest = computeContractDigest(root);
  assert.ok(digest.ok, digest.ok ? "" : digest.error.message);
  writeFileSync(join(root, COMMITTED_DIGEST_FILE), serialiseDigest(digest.value));
  return root;
}
