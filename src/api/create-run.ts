import type { RunIdentity } from "../authority/identity.js";
import type { CreateRunRequest } from "../authority/store.js";
import { canonicalDigest, sha256Hex } from "../contract/digest.js";
import { canonicalJson } from "../contract/canonical-json.js";
import { newIdSuffix } from "../contract/id-suffix.js";
import { MAX_PROTOCOL_VERSION } from "../contract/versions.js";
import { buildCommand, defaultCommandId } from "../authority/commands.js";
import { fail, ok, type Result } from "../authority/errors.js";

/** POST /v1/runs's body, as API_SCHEMAS.RunSpec has already checked it. */
export interface RunSpec {
  agent: { kind: "fake"; script: string } | { kind: "command"; command: string } | { kind: "profile"; profile: string };
  prompt?: string;
  workspace?: string;
  labels?: Record<string, string>;
  priority?: number;
  protocolVersion?: number;
  observeCredentials?: boolean;
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
 * — for POST /v1/runs and `prp authority run create` alike.
 */
export function createRunRequest(
  spec: RunSpec,
  identity: RunIdentity,
  tokenId: string | null,
  nowMs: number,
): Result<CreateRunRequest> {
  // Fail closed: until named profiles exist, a profile would run something other than what was asked.
  if (spec.agent.kind === "profile")
    return fail(
      "agent_profile_unknown",
      "/agent/profile",
      `no agent profile named ${JSON.stringify(spec.agent.profile)} here: name the agent's command line instead ({"kind": "command", "command": "…"})`,
    );
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
