import { join } from "node:path";
import { packageRoot } from "../../src/contract/package-root.js";
import { isInstalled } from "../../src/agents/agents-dir.js";
import { findProfile, isPackageLaunch, loadCatalog, type AgentProfile } from "../../src/agents/catalog.js";

/**
 * The agents folder the tests probe: `npm ci` fills it from the registry (the `prepare` script
 * runs `npm run agents:install`), so no test reaches the network.
 */
export const TEST_AGENTS_DIR = join(packageRoot(), "node_modules", ".cache", "prp-kit", "agents");

/** A built-in profile whose package `npm ci` installed, or an error that says how to install it. */
export function installedProfile(name: string): AgentProfile {
  const catalog = loadCatalog("");
  if (!catalog.ok) throw new Error(catalog.error.message);
  const found = findProfile(catalog.value, name);
  if (!found.ok) throw new Error(found.error.message);
  const launch = found.value.launch;
  if (isPackageLaunch(launch) && !isInstalled(TEST_AGENTS_DIR, name, launch))
    throw new Error(`${name} is not installed in ${TEST_AGENTS_DIR}: run \`npm run agents:install\` (npm ci runs it)`);
  return found.value;
}
