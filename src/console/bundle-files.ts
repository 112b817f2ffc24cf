import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  realpathSync,
} from "node:fs";
import { join, relative, sep } from "node:path";

/** A file of a run's bundle, as `GET /bundles/{runId}/` lists it. */
export interface ArtifactFile {
  name: string;
  bytes: number;
}

/** The most files listed from one bundle: a page, not a file browser. */
const MAX_FILES = 200;

/**
 * The native execution bundles of runs, as `prp demo` writes them: DIR/<runId>/bundle/.
 * Only regular files found by walking the bundle are listed, and only a listed name is ever
 * opened, so a request cannot name a path outside the bundle. No symlink is followed at any
 * level: not the run's folder, not `bundle`, not a file; the folder may change while it is
 * read (a run writing its bundle), and a file gone since is just not listed.
 */
export class BundleFiles {
  constructor(private readonly dir: string) {}

  /** DIR/<runId>/bundle when no part of it below DIR is a symlink, else undefined. */
  private root(runId: string): string | undefined {
    if (!/^[\w.-]+$/.test(runId) || runId.startsWith(".")) return undefined;
    try {
      const dir = realpathSync(this.dir);
      const root = join(dir, runId, "bundle");
      return realpathSync(root) === root && lstatSync(root).isDirectory() ? root : undefined;
    } catch {
      return undefined;
    }
  }

  list(runId: string): ArtifactFile[] {
    const root = this.root(runId);
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
        let stat;
        try {
          stat = lstatSync(path);
        } catch {
          continue; // removed since the folder was read
        }
        if (stat.isDirectory()) walk(path);
        else if (stat.isFile()) files.push({ name: relative(root!, path).split(sep).join("/"), bytes: stat.size });
      }
    };
    if (root !== undefined) walk(root);
    return files;
  }

  /**
   * An open descriptor on a listed file (the caller closes it), or undefined. Opened without
   * following a final symlink and checked to be the regular file under the bundle that was
   * listed, so a file swapped for a symlink or a folder after the listing is not served.
   */
  open(runId: string, name: string): { fd: number; bytes: number } | undefined {
    const root = this.root(runId);
    if (root === undefined || !this.list(runId).some((f) => f.name === name)) return undefined;
    const path = join(root, ...name.split("/"));
    let fd: number | undefined;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      const stat = fstatSync(fd);
      // On Linux, the path of what was opened, not of what the name points to now.
      const opened = existsSync("/proc/self/fd") ? readlinkSync(`/proc/self/fd/${fd}`) : realpathSync(path);
      if (!stat.isFile() || opened !== path) throw new Error("not the listed file");
      return { fd, bytes: stat.size };
    } catch {
      if (fd !== undefined) closeSync(fd);
      return undefined;
    }
  }
}
