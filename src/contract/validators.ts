import type { ErrorObject, ValidateFunction } from "ajv";
import * as generated from "./generated/validators.cjs";
import { contractError, type ContractError } from "./errors.js";
import type { ValidatorName } from "./validator-names.js";

/** The compiled standalone validators: no schema compilation or eval at run time. */
export const validators: Readonly<Record<ValidatorName, ValidateFunction>> = generated;

/** Runs one validator; returns the first violation as a schema_validation error, or null. */
/** `label` names the document in the message; a function is called only on a refusal. */
export function schemaError(
  name: ValidatorName,
  value: unknown,
  label: string | (() => string),
  basePath = "",
): ContractError | null {
  const first = firstViolation(name, value);
  if (first === null) return null;
  const path = basePath + (first?.instancePath ?? "");
  return contractError(
    "schema_validation",
    path,
    `schema_validation_failed: ${typeof label === "string" ? label : label()} must be accepted: ${path || "/"} ${describeViolation(first)}`,
  );
}

/** Runs one validator; null when the value is valid, else its most telling violation (undefined if ajv named none). */
export function firstViolation(name: ValidatorName, value: unknown): ErrorObject | undefined | null {
  const validate = validators[name];
  return validate(value) ? null : pickError(validate.errors ?? []);
}

/**
 * The most telling error. ajv lists an if/then, oneOf or anyOf failure after the errors inside
 * it, so prefer the deepest instance path; at equal depth prefer an error about the value's
 * content over one that only says the value is of another type (a "null or object" choice
 * fails its null branch with a type error that explains nothing).
 */
const rank = (e: ErrorObject) =>
  e.instancePath.length * 4 + (COMPOSITE.has(e.keyword) ? 0 : e.keyword === "type" ? 1 : 2);
const COMPOSITE = new Set(["if", "oneOf", "anyOf", "allOf", "not"]);

function pickError(errors: ErrorObject[]): ErrorObject | undefined {
  let best = errors[0];
  for (const e of errors) if (best && rank(e) > rank(best)) best = e;
  return best;
}

/** The rule a violation broke, in words. */
export function describeViolation(e: ErrorObject | undefined): string {
  if (e === undefined) return "is invalid";
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "additionalProperties":
      return `must not have the property "${String(p.additionalProperty)}" (this object is closed)`;
    case "required":
      return `must have the required property "${String(p.missingProperty)}"`;
    case "false schema":
      return "must not be present here";
    case "anyOf":
      return "must match one of the alternatives the schema allows";
    case "const":
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case "enum": {
      const allowed = p.allowedValues as unknown[];
      return allowed.length <= 12
        ? `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`
        : `must be one of the ${allowed.length} values the schema lists`;
    }
    default:
      return e.message ?? "is invalid";
  }
}
