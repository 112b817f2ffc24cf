import type { RunIdentity } from "../authority/identity.js";
import type { CreateRunRequest } from "../authority/store.js";
import { canonicalDigest, sha256Hex } from "../contract/digest.js";
import { canonicalJson } from "../contract/canonical-json.js";
import { newIdSuffix } from "../contract/id-suffix.js";
import { MAX_PROTOCOL_VERSION } from "../contract/versions.js";
import { buildCommand, defaultCommandId } from "../authority/commands.js";
import { fail, ok, type Result } from "../authority/errors.js";
import { AGENT_LABEL } from "../authority/dispatch-rules.js";
import type { AgentOutcome } from "../agents/agent-error.js";
import { loadCatalog, type AgentProfile } from "../agents/catalog.js";
import type { PermissionPolicy } from "../harness/acp/permissions.js";

/** POST /v1/runs's body, as API_SCHEMAS.RunSpec has already checked it. */
export interface RunSpec {
  agent: { kind: "fake"; script: string } | { kind: "command"; command: string } | { kind: "profile"; profile: string };
  prompt?: string;
  workspace?: string;
  labels?: Record<string, string>;
  priority?: number;
  protocolVersion?: number;
  observeCredentials?: boolean;
  permissionPolicy?: PermissionPolicy;
  /** The stall watch's limit and grace for this run (docs/api.md); absent: the runner's defaults. */
  stallLimitMs?: number;
  stallGraceMs?: number;
}

/**
 * The id suffix of a new run: fresh, or with an Idempotency-Key derived from the token and the
 * key, so that a retry of the same request names the same run and the store finds it.
 */
export function runIdSuffix(tokenId: string, idempotencyKey: string | undefined): string {
  if (idempotencyKey === undefined) return newIdSuffix();
  return `key_${sha256Hex(`${tokenId}\0${idempotencyKey}`).slice(0, 32)}`;
}

/**
 * The store's request for a new run: its identity, its spec (canonical, with a digest a retry
 * must match) and its opening commands — run.prepare, session.open and, with a prompt, turn.start
 * — for POST /v1/runs and `prp authority run create` alike. A named agent must be in the
 * authority's catalog (built-in and PRP_AGENT_CATALOG); whether a worker has it installed is the
 * worker's to say (it advertises it, or its runner ends the run `agent_not_installed`).
 */
export function createRunRequest(
  asked: RunSpec,
  identity: RunIdentity,
  tokenId: string | null,
  nowMs: number,
  catalog: () => AgentOutcome<AgentProfile[]> = loadCatalog,
): Result<CreateRunRequest> {
  if (asked.permissionPolicy !== undefined && asked.agent.kind === "fake")
    return fail(
      "invalid_request",
      "/permissionPolicy",
      "a fake-harness run has no agent to answer for: its script asks what it asks; drop permissionPolicy, or run an ACP agent (command or profile)",
    );
  const named = withAgentLabel(asked, catalog);
  if (!named.ok) return named;
  const spec = named.value;
  const protocolVersion = spec.protocolVersion ?? MAX_PROTOCOL_VERSION;
  const opening: Array<[string, Record<string, unknown>]> = [
    [
      "run.prepare",
      { workspace: spec.workspace ?? "default", ...(spec.observeCredentials ? { observeCredentials: true } : {}) },
    ],
    ["session.open", { reuse: "new_per_run" }],
  ];
  if (spec.prompt !== undefined) opening.push(["turn.start", { text: spec.prompt, turnId: identity.turnId }]);
  const commands = [];
  for (const [i, [type, payload]] of opening.entries()) {
    const controllerSeq = i + 1;
    const built = buildCommand(
      { runId: identity.runId, protocolVersion },
      { controllerSeq, commandId: defaultCommandId(controllerSeq), type, payload, nowMs },
    );
    if (!built.ok) return built;
    commands.push(built.value);
  }
  return ok({
    identity,
    init: { protocolVersion, nowMs },
    spec: {
      spec: canonicalJson(spec),
      specDigest: canonicalDigest(spec),
      labels: spec.labels ?? {},
      priority: spec.priority ?? 0,
      createdBy: tokenId,
    },
    commands,
  });
}

/** At most this many labels, as API_SCHEMAS.RunSpec says: the agent label counts. */
const MAX_LABELS = 32;

/**
 * A profile run's spec with the label `agent=<name>`, which a worker advertising that agent
 * holds: the one rule that sends it to a worker that can run it. A profile not in the catalog,
 * or labels naming another agent, are refused.
 */
function withAgentLabel(spec: RunSpec, catalog: () => AgentOutcome<AgentProfile[]>): Result<RunSpec> {
  if (spec.agent.kind !== "profile") return ok(spec);
  const name = spec.agent.profile;
  const profiles = catalog();
  if (!profiles.ok)
    return fail(
      "agent_profile_unknown",
      "/agent/profile",
      `the authority cannot read its agent catalog: ${profiles.error.message}`,
    );
  if (!profiles.value.some((p) => p.name === name))
    return fail(
      "agent_profile_unknown",
      "/agent/profile",
      `no agent profile named ${JSON.stringify(name)} in the authority's catalog: it has ${profiles.value.map((p) => p.name).join(", ")}; an agent of your own is {"kind": "command", "command": "…"}`,
    );
  const labels = spec.labels ?? {};
  if (Object.hasOwn(labels, AGENT_LABEL)) {
    if (labels[AGENT_LABEL] === name) return ok(spec);
    return fail(
      "invalid_request",
      `/labels/${AGENT_LABEL}`,
      `the label ${AGENT_LABEL}=${labels[AGENT_LABEL]} names another agent than the run's profile ${name}: drop it, or make it ${AGENT_LABEL}=${name}`,
    );
  }
  if (Object.keys(labels).length >= MAX_LABELS)
    return fail(
      "invalid_request",
      "/labels",
      `a profile run carries the label ${AGENT_LABEL}=${name}: at most ${MAX_LABELS - 1} labels of your own`,
    );
  return ok({ ...spec, labels: { ...labels, [AGENT_LABEL]: name } });
}
