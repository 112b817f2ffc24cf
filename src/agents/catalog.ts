import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { packageRoot } from "../contract/package-root.js";
import { ok } from "../contract/result.js";
import { agentError, type AgentOutcome } from "./agent-error.js";
import type { AgentCatalog, AgentProfile, PackageLaunch } from "./generated/catalog-types.js";

export type { AgentCatalog, AgentProfile, PackageLaunch } from "./generated/catalog-types.js";

/** The variable that names a catalog of the user's own, read after (and overriding) the built-in one. */
export const CATALOG_ENV = "PRP_AGENT_CATALOG";

export const builtInCatalogPath = (): string => join(packageRoot(), "agents", "catalog.json");

let validator: ValidateFunction | undefined;
/** Compiled on first use: most `prp` commands never read the catalog. */
function validate(): ValidateFunction {
  if (!validator) {
    const schema = JSON.parse(readFileSync(join(packageRoot(), "agents", "catalog.schema.json"), "utf8")) as object;
    validator = new Ajv2020({ strict: true, allErrors: false }).compile(schema);
  }
  return validator;
}

/** A catalog's text checked against agents/catalog.schema.json; names must be unique. */
export function parseCatalog(text: string, source: string): AgentOutcome<AgentCatalog> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return agentError("catalog_invalid", "", `${source} is not JSON: ${(e as Error).message}`);
  }
  const check = validate();
  if (!check(value)) {
    const e = check.errors?.[0];
    return agentError(
      "catalog_invalid",
      e?.instancePath ?? "",
      `${source}${e?.instancePath ? ` at ${e.instancePath}` : ""}: ${e?.message ?? "does not match the catalog schema"}`,
    );
  }
  const catalog = value as AgentCatalog;
  const seen = new Set<string>();
  for (const [i, agent] of catalog.agents.entries()) {
    if (seen.has(agent.name))
      return agentError("catalog_invalid", `/agents/${i}/name`, `${source} names the agent "${agent.name}" twice`);
    seen.add(agent.name);
  }
  return ok(catalog);
}

function readCatalog(path: string): AgentOutcome<AgentCatalog> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    return agentError("catalog_unreadable", "", `cannot read the agent catalog ${path}: ${(e as Error).message}`);
  }
  return parseCatalog(text, path);
}

/**
 * The agents this machine knows: the built-in catalog, then the user's (`--catalog FILE` or
 * PRP_AGENT_CATALOG), whose profiles replace built-in ones of the same name.
 */
export function loadCatalog(userPath: string | undefined = process.env[CATALOG_ENV]): AgentOutcome<AgentProfile[]> {
  const builtIn = readCatalog(builtInCatalogPath());
  if (!builtIn.ok) return builtIn;
  const byName = new Map(builtIn.value.agents.map((a) => [a.name, a]));
  if (userPath) {
    const user = readCatalog(userPath);
    if (!user.ok) return user;
    for (const a of user.value.agents) byName.set(a.name, a);
  }
  return ok([...byName.values()]);
}

/** One profile by name, or `agent_unknown` listing the names there are. */
export function findProfile(profiles: AgentProfile[], name: string): AgentOutcome<AgentProfile> {
  const found = profiles.find((p) => p.name === name);
  if (found) return ok(found);
  return agentError(
    "agent_unknown",
    name,
    `no agent named "${name}": the catalog has ${profiles.map((p) => p.name).join(", ")} (\`prp agents list\`); a command line of your own goes in --agent-command`,
  );
}

export const isPackageLaunch = (launch: AgentProfile["launch"]): launch is PackageLaunch => "package" in launch;
