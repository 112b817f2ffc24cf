import { PROTOCOL_VERSION } from "@agentclientprotocol/sdk";
import { isPlainObject } from "../contract/plain-object.js";
import { cutText } from "../contract/text-cut.js";
import { redact, redactText } from "../harness/redaction.js";
import type { AgentProfile } from "./catalog.js";

/** What the agent says it is (ACP `agentInfo`), cut and redacted: the agent is untrusted. */
export interface ProbedAgentInfo {
  name: string | null;
  title: string | null;
  version: string | null;
}

export interface ProbedAuthMethod {
  id: string;
  name: string;
}

/** An `initialize` answer read into what a report shows. */
export interface InitializeAnswer {
  protocolVersion: number;
  agentInfo: ProbedAgentInfo | null;
  /** Redacted; `{truncated, bytes}` when its JSON is over 16 KiB. */
  agentCapabilities: Record<string, unknown>;
  authMethods: ProbedAuthMethod[];
}

/** Where the answer differs from the profile's `expects`: warnings, never a failure. */
export interface ExpectationGaps {
  missingCapabilities: string[];
  missingAuthMethods: string[];
}

const MAX_TEXT = 160;
const MAX_AUTH_METHODS = 32;
const MAX_CAPABILITIES_BYTES = 16 * 1024;

const text = (value: string): string => cutText(redactText(value).text, MAX_TEXT);
const optionalText = (value: unknown): string | null => (typeof value === "string" ? text(value) : null);

/**
 * The answer checked against the shape ACP gives InitializeResponse (the SDK passes a result
 * through unchecked): a reason it is not one, or the answer read. Its protocol version is
 * returned as is; whether this client speaks it is the caller's question.
 */
export function readInitializeAnswer(
  result: unknown,
): { ok: true; value: InitializeAnswer } | { ok: false; why: string } {
  if (!isPlainObject(result)) return { ok: false, why: "the answer to initialize is not an object" };
  const { protocolVersion, agentInfo, agentCapabilities, authMethods } = result;
  if (typeof protocolVersion !== "number" || !Number.isInteger(protocolVersion))
    return { ok: false, why: "the answer to initialize has no integer protocolVersion" };
  if (agentInfo != null && !(isPlainObject(agentInfo) && typeof agentInfo.name === "string"))
    return { ok: false, why: "agentInfo in the answer to initialize is not an implementation with a name" };
  if (agentCapabilities != null && !isPlainObject(agentCapabilities))
    return { ok: false, why: "agentCapabilities in the answer to initialize is not an object" };
  if (
    authMethods != null &&
    !(Array.isArray(authMethods) && authMethods.every((m) => isPlainObject(m) && typeof m.id === "string"))
  )
    return { ok: false, why: "authMethods in the answer to initialize is not a list of methods with ids" };
  const capabilities = redact(agentCapabilities ?? {}).value as Record<string, unknown>;
  const bytes = JSON.stringify(capabilities).length;
  return {
    ok: true,
    value: {
      protocolVersion,
      agentInfo: isPlainObject(agentInfo)
        ? {
            name: optionalText(agentInfo.name),
            title: optionalText(agentInfo.title),
            version: optionalText(agentInfo.version),
          }
        : null,
      agentCapabilities: bytes <= MAX_CAPABILITIES_BYTES ? capabilities : { truncated: true, bytes },
      authMethods: ((authMethods ?? []) as Record<string, unknown>[]).slice(0, MAX_AUTH_METHODS).map((m) => ({
        id: text(m.id as string),
        name: typeof m.name === "string" ? text(m.name) : "",
      })),
    },
  };
}

export const speaksProtocol = (answer: InitializeAnswer): boolean => answer.protocolVersion === PROTOCOL_VERSION;

/** The capabilities and auth methods the profile expects that the answer lacks. */
export function expectationGaps(profile: AgentProfile, answer: InitializeAnswer): ExpectationGaps {
  const ids = new Set(answer.authMethods.map((m) => m.id));
  return {
    missingCapabilities: profile.expects.capabilities.filter((c) => !answer.agentCapabilities[c]),
    missingAuthMethods: profile.expects.authMethods.filter((id) => !ids.has(id)),
  };
}

/** One warning a person reads for each gap. */
export const gapWarnings = (profile: AgentProfile, gaps: ExpectationGaps): string[] => [
  ...gaps.missingCapabilities.map(
    (c) => `the agent does not offer the capability ${c}, which the ${profile.name} profile expects`,
  ),
  ...gaps.missingAuthMethods.map(
    (id) => `the agent does not advertise the auth method ${id}, which the ${profile.name} profile expects`,
  ),
];
