import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentProfile, PackageLaunch } from "../../src/agents/catalog.js";
import type { TestPackage } from "../support/npm-registry.js";

/** A script line that writes the file `$PRP_TEST_MARKS/<file>`: proof that the script ran. */
const mark = (file: string): string =>
  `node -e "require('fs').writeFileSync(require('path').join(process.env.PRP_TEST_MARKS, '${file}'), '')"`;

/**
 * The test agents: `prp-test-agent` (a bin, an install script the profile allows) depends on
 * `prp-test-dep`, whose install script stands for a hostile dependency's, writing outside the
 * install; `prp-failing-agent`'s allowed install script fails.
 */
export const TEST_PACKAGES: TestPackage[] = [
  {
    manifest: {
      name: "prp-test-agent",
      version: "1.0.0",
      bin: { "prp-test-agent": "bin.js" },
      dependencies: { "prp-test-dep": "1.0.0" },
      scripts: { install: mark("agent-script-ran") },
    },
    files: { "bin.js": '#!/usr/bin/env node\nconsole.log("prp test agent");\n' },
  },
  { manifest: { name: "prp-test-dep", version: "1.0.0", scripts: { postinstall: mark("dep-script-ran") } } },
  {
    manifest: {
      name: "prp-failing-agent",
      version: "1.0.0",
      bin: { "prp-failing-agent": "bin.js" },
      scripts: { install: "node -e \"process.stderr.write('cannot build\\n'); process.exit(3)\"" },
    },
    files: { "bin.js": "#!/usr/bin/env node\n" },
  },
];

export function testProfile(
  name: string,
  launch: Partial<PackageLaunch> | { command: string; args: string[] },
): AgentProfile {
  const full =
    "command" in launch
      ? launch
      : {
          package: "prp-test-agent",
          version: "1.0.0",
          bin: "prp-test-agent",
          args: [],
          node: ">=18",
          installScripts: ["prp-test-agent"],
          ...launch,
        };
  return {
    name,
    title: `test agent ${name}`,
    launch: full,
    auth: { env: [], files: [], login: `nothing to log in for ${name}` },
    expects: { protocolVersion: 1, capabilities: [], authMethods: [] },
    permissionModes: { ask: "default", deny: "default", "allow-reads": "default", forbid: "default" },
    notes: "",
  };
}

/** A user catalog file holding `profiles`. */
export function writeCatalog(dir: string, profiles: AgentProfile[]): string {
  const path = join(dir, "catalog.json");
  writeFileSync(path, JSON.stringify({ schema: "prp-kit.agent_catalog.v1", agents: profiles }));
  return path;
}
