import { pointer } from "../contract/errors.js";
import { describeViolation, firstViolation } from "../contract/validators.js";
import { VALIDATOR_REFS, type ValidatorName } from "../contract/validator-names.js";
import { fail, type Result, type TransportErrorCode } from "./errors.js";

/**
 * The refusal code of a shape violation by the top-level member it is in: a peer that breaks the
 * rule of `protocol` has the wrong protocol, not merely a malformed message. Members not listed
 * get the caller's fallback.
 */
export type CodesByMember = Readonly<Partial<Record<string, TransportErrorCode>>>;

/**
 * Checks a transport message against its schema (protocol/schemas, the one source of these
 * rules). The refusal names the JSON Pointer of the offending member, a missing member at the
 * place it should be, and the schema rule it broke. `base` prefixes the path when `value` sits
 * inside the message, as a payload does.
 */
export function shapeRefusal(
  name: ValidatorName,
  value: unknown,
  fallback: TransportErrorCode,
  codes: CodesByMember = {},
  base = "",
): Result<never> | null {
  const violation = firstViolation(name, value);
  if (violation === null) return null;
  const missing = violation?.keyword === "required" ? String(violation.params.missingProperty) : null;
  const at = (violation?.instancePath ?? "") + (missing === null ? "" : pointer("", missing));
  const member = at.split("/")[1] ?? "";
  const path = base + at;
  const rule = missing === null ? describeViolation(violation) : "must be present";
  return fail(codes[member] ?? fallback, path, `${path || "the message"} ${rule} (${schemaName(name)})`);
}

/** `runner-handshake.schema.json#/$defs/helloPayload`, for a person to look the rule up. */
function schemaName(name: ValidatorName): string {
  const url = new URL(VALIDATOR_REFS[name]);
  return `${url.pathname.split("/").pop()}${decodeURIComponent(url.hash)}`;
}
