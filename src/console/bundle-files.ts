import { lstatSync, readdirSync } from "node:fs";
import { join, relative, sep } from "node:path";
import type { ArtifactFile } from "./api-types.js";

/** The most files listed from one bundle: a page, not a file browser. */
const MAX_FILES = 200;

/**
 * The native execution bundles of runs, as `prp demo` writes them: DIR/<runId>/bundle/.
 * Only regular files found by walking the bundle (never a symlink) are listed, and only a
 * listed name is ever opened, so a request cannot name a path outside the bundle.
 */
export class BundleFiles {
  constructor(private readonly dir: string) {}

  list(runId: string): ArtifactFile[] {
    if (!/^[\w.-]+$/.test(runId) || runId.startsWith(".")) return [];
    const root = join(this.dir, runId, "bundle");
    const files: ArtifactFile[] = [];
    const walk = (folder: string) => {
      let names: string[];
      try {
        names = readdirSync(folder).sort();
      } catch {
        return;
      }
      for (const name of names) {
        if (files.length >= MAX_FILES) return;
        const path = join(folder, name);
        const stat = lstatSync(path);
        if (stat.isDirectory()) walk(path);
        else if (stat.isFile()) files.push({ name: relative(root, path).split(sep).join("/"), bytes: stat.size });
      }
    };
    walk(root);
    return files;
  }

  /** The path of a listed file, or undefined. */
  path(runId: string, name: string): string | undefined {
    return this.list(runId).some((f) => f.name === name) ? join(this.dir, runId, "bundle", ...name.split("/")) : undefined;
  }
}
