import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { REGISTERED_SOURCES } from "../fingerprint/registry.js";

/** A contract tree on disk: a package root (the folder holding protocol/). */
export interface ContractTree {
  root: string;
  /** What the person named: the folder or the git revision. */
  label: string;
  /** Removes a tree checked out of git; nothing for a folder. */
  dispose: () => void;
}

export interface TreeError {
  code: "tree_not_found" | "tree_not_a_contract";
  path: string;
  message: string;
}

export type TreeResult = { ok: true; value: ContractTree } | { ok: false; error: TreeError };

const git = (repo: string, args: string[]): string =>
  execFileSync("git", ["-C", repo, ...args], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    stdio: ["ignore", "pipe", "pipe"],
  });

/**
 * A folder (a package root with protocol/ inside) or a git revision of the repository at
 * `repo`, whose registered sources are copied out to a temporary folder.
 */
export function openContractTree(spec: string, repo: string): TreeResult {
  if (existsSync(spec) && statSync(spec).isDirectory()) {
    const root = resolve(spec);
    if (!existsSync(join(root, "protocol"))) {
      return {
        ok: false,
        error: {
          code: "tree_not_a_contract",
          path: spec,
          message: `${spec} has no protocol/ folder: name a PRP Kit checkout (the folder holding package.json and protocol/)`,
        },
      };
    }
    return { ok: true, value: { root, label: spec, dispose: () => {} } };
  }
  let commit: string;
  try {
    commit = git(repo, ["rev-parse", "--verify", "--quiet", `${spec}^{commit}`]).trim();
  } catch {
    return {
      ok: false,
      error: {
        code: "tree_not_found",
        path: spec,
        message: `${spec} is neither a folder nor a git revision of ${repo}`,
      },
    };
  }
  const paths = REGISTERED_SOURCES.map((s) => s.path);
  const files = git(repo, ["ls-tree", "-r", "--name-only", commit, "--", ...paths])
    .split("\n")
    .filter(Boolean);
  if (!files.some((f) => f.startsWith("protocol/schemas/"))) {
    return {
      ok: false,
      error: {
        code: "tree_not_a_contract",
        path: spec,
        message: `revision ${spec} has no protocol/schemas: it predates the contract`,
      },
    };
  }
  const root = mkdtempSync(join(tmpdir(), "prp-contract-tree-"));
  for (const file of files) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(
      join(root, file),
      execFileSync("git", ["-C", repo, "show", `${commit}:${file}`], { maxBuffer: 64 * 1024 * 1024 }),
    );
  }
  return {
    ok: true,
    value: {
      root,
      label: `${spec} (${commit.slice(0, 12)})`,
      dispose: () => rmSync(root, { recursive: true, force: true }),
    },
  };
}
