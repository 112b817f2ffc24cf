import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../../src/contract/package-root.js";
import type { AgentProfile } from "../../src/agents/catalog.js";

/** The variable the probe agent's profiles name as their credential. */
export const TOKEN_ENV = "PRP_TEST_TOKEN";

const PERMISSION_MODES = { ask: "default", deny: "default", "allow-reads": "default", forbid: "default" };

/** A command profile that starts test/agents/probe-agent.ts in `mode`, named `probe-<mode>`. */
export function probeAgentProfile(mode: string): AgentProfile {
  return {
    name: `probe-${mode}`,
    title: `probe agent: ${mode}`,
    launch: { command: process.execPath, args: [join(packageRoot(), "dist/test/agents/probe-agent.js"), mode] },
    auth: { env: [TOKEN_ENV], files: [".probe/token"], login: `pass --agent-env ${TOKEN_ENV}=…` },
    expects: { protocolVersion: 1, capabilities: ["loadSession"], authMethods: ["token"] },
    permissionModes: PERMISSION_MODES,
    notes: "",
  };
}

/** A user catalog in `dir` holding `profiles`; its path, for --catalog. */
export function writeCatalog(dir: string, profiles: AgentProfile[]): string {
  const file = join(dir, "catalog.json");
  writeFileSync(file, JSON.stringify({ schema: "prp-kit.agent_catalog.v1", agents: profiles }));
  return file;
}
