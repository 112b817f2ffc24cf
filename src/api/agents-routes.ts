import { readdirSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import type { AgentOutcome } from "../agents/agent-error.js";
import { loadCatalog, type AgentProfile } from "../agents/catalog.js";
import type { AgentList } from "../contract/api/generated/types.js";
import { scenariosDir } from "../harness/script-file.js";
import { ApiError } from "./errors.js";

/** The fake harness's scripts by name (a RunSpec's `{kind: "fake", script}`), sorted. */
export const scriptNames = (dir: string = scenariosDir()): string[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => f.slice(0, -".json".length))
    .sort();

/**
 * API_SCHEMAS.AgentList: the catalog's profiles (read as a create reads them, so that a name
 * listed here is one POST /v1/runs takes) and the scripts. A catalog that cannot be read is the
 * server's fault, said as such.
 */
export function agentList(
  catalog: () => AgentOutcome<AgentProfile[]> = loadCatalog,
  scripts: () => string[] = scriptNames,
): AgentList {
  const profiles = catalog();
  if (!profiles.ok)
    throw new ApiError(
      "agent_catalog_invalid",
      `the authority cannot read its agent catalog: ${profiles.error.message}`,
    );
  return { profiles: profiles.value.map((p) => ({ name: p.name, title: p.title })), scripts: scripts() };
}

/** GET /v1/agents: what a run's agent may name here, for a form that offers the choices. */
export function agentRoutes(app: FastifyInstance): void {
  app.get("/agents", { config: { scope: "read" } }, async () => agentList());
}
