import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../../src/contract/package-root.js";

/**
 * A user catalog (PRP_AGENT_CATALOG) whose one profile, `name`, is a command profile starting the
 * SDK test agent playing `scenario`: a named agent that needs no install, login or network.
 */
export function writeTestAgentCatalog(dir: string, scenario: string, name = "sdk-test"): string {
  const path = join(dir, "user-catalog.json");
  const catalog = {
    schema: "prp-kit.agent_catalog.v1",
    agents: [
      {
        name,
        title: "The SDK test agent",
        launch: {
          command: process.execPath,
          args: [join(packageRoot(), "dist/src/harness/acp/test-agent-process.js"), "--scenario", scenario],
        },
        auth: { env: [], files: [], login: "needs none" },
        expects: { protocolVersion: 1, capabilities: [], authMethods: [] },
        permissionModes: { ask: "default", deny: "default", "allow-reads": "default", forbid: "default" },
        notes: "A test's own agent.",
      },
    ],
  };
  writeFileSync(path, JSON.stringify(catalog));
  return path;
}
