import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { PackageLaunch } from "./generated/catalog-types.js";

/** The variable that names the folder agents are installed in. */
export const AGENTS_DIR_ENV = "PRP_AGENTS_DIR";

/**
 * Where `prp agents install` puts agents and where every command looks for them: --agents-dir,
 * PRP_AGENTS_DIR, then the user's cache folder ($XDG_CACHE_HOME or ~/.cache)/prp-kit/agents.
 */
export function agentsDir(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return resolve(flag);
  if (env[AGENTS_DIR_ENV]) return resolve(env[AGENTS_DIR_ENV]);
  const cache = env.XDG_CACHE_HOME ? resolve(env.XDG_CACHE_HOME) : join(homedir(), ".cache");
  return join(cache, "prp-kit", "agents");
}

/** One install: its own package.json, package-lock.json and node_modules, per exact version. */
export const installDir = (dir: string, name: string, launch: PackageLaunch): string =>
  join(dir, `${name}@${launch.version}`);

/** Written last, atomically, by a complete install: a folder without it was never finished. */
export const INSTALLED_MARKER = "prp-installed.json";

/** The installed package's bin, as npm linked it. */
export const installedBin = (home: string, launch: PackageLaunch): string =>
  join(home, "node_modules", ".bin", launch.bin);

/** A complete install: the marker was written and the bin is there. */
export const isInstalled = (dir: string, name: string, launch: PackageLaunch): boolean => {
  const home = installDir(dir, name, launch);
  return existsSync(join(home, INSTALLED_MARKER)) && existsSync(installedBin(home, launch));
};
