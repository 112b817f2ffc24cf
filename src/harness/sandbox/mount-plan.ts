import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { isAbsolute, normalize } from "node:path";
import type { SandboxPaths } from "./sandbox-policy.js";

/**
 * One step of building the harness's filesystem view inside an empty root:
 * - `ro`/`rw`: the host path bound at the same path, read-only or writable;
 * - `link`: a symbolic link, as on the host (merged-/usr systems reach /bin, /lib … through them);
 * - `hide`: an empty, read-only folder (or file) laid over the path, whatever holds it.
 */
export type MountOp =
  { op: "ro" | "rw"; path: string } | { op: "link"; path: string; target: string } | { op: "hide"; path: string };

/** What every program needs to start: the system's folders, read-only, where they exist. */
export const SYSTEM_READABLE = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"];

const RANK = { link: 0, ro: 1, rw: 1, hide: 2 } as const;
const depth = (path: string) => path.split("/").filter(Boolean).length;

/**
 * The ordered mount steps for a view. A path is bound at its real location (so that no bind
 * lands through a symbolic link), and a path that is itself a link is recreated as one beside a
 * bind of its target. Steps run parents first, so a writable workspace inside a read-only folder
 * stays writable and a hidden folder inside a visible one stays hidden; at the same depth a hide
 * comes last and wins. A path that does not exist is left out: there is nothing to show or hide.
 */
export function mountPlan(paths: SandboxPaths): MountOp[] {
  const ops = new Map<string, MountOp>();
  const bind = (path: string, op: "ro" | "rw", seen = new Set<string>()): void => {
    const p = normalize(path);
    if (!isAbsolute(p) || !existsSync(p) || seen.has(p)) return;
    seen.add(p);
    if (lstatSync(p).isSymbolicLink()) {
      ops.set(`link ${p}`, { op: "link", path: p, target: readlinkSync(p) });
      return bind(realpathSync(p), op, seen);
    }
    const real = realpathSync(p);
    const key = `bind ${real}`;
    if (ops.get(key)?.op !== "rw") ops.set(key, { op, path: real }); // writable wins over read-only
  };
  /** A bind inside another of the same kind shows nothing more: each costs a mount at every start. */
  const redundant = (o: MountOp) =>
    (o.op === "ro" || o.op === "rw") &&
    [...ops.values()].some((p) => p !== o && p.op === o.op && o.path.startsWith(p.path === "/" ? "/" : `${p.path}/`));
  for (const p of SYSTEM_READABLE) bind(p, "ro");
  for (const p of paths.readable) bind(p, "ro");
  for (const p of paths.writable) bind(p, "rw");
  for (const p of paths.hidden) {
    const n = normalize(p);
    if (isAbsolute(n) && existsSync(n)) ops.set(`hide ${realpathSync(n)}`, { op: "hide", path: realpathSync(n) });
  }
  return [...ops.values()]
    .filter((o) => !redundant(o))
    .sort((a, b) => depth(a.path) - depth(b.path) || RANK[a.op] - RANK[b.op]);
}

/** The plan as the setup script's arguments: `OP PATH [TARGET]` each. */
export const planArgs = (plan: MountOp[]): string[] =>
  plan.flatMap((o) => (o.op === "link" ? [o.op, o.path, o.target] : [o.op, o.path]));
