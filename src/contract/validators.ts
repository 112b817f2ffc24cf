import type { ErrorObject, ValidateFunction } from "ajv";
import * as generated from "./generated/validators.cjs";
import { contractError, type ContractError } from "./errors.js";
import type { ValidatorName } from "./validator-names.js";

/** The compiled standalone validators: no schema compilation or eval at run time. */
export const validators: Readonly<Record<ValidatorName, ValidateFunction>> = generated;

/** Runs one validator; returns the first violation as a schema_validation error, or null. */
export function schemaError(name: ValidatorName, value: unknown, label: string, basePath = ""): ContractError | null {
  const validate = validators[name];
  if (validate(value)) return null;
  const first = pickError(validate.errors ?? []);
  const path = basePath + (first?.instancePath ?? "");
  return contractError("schema_validation", path, `schema_validation_failed: ${label} must be accepted: ${path || "/"} ${describe(first)}`);
}

/** The most specific error: ajv lists an if/then or oneOf failure after the errors inside it. */
function pickError(errors: ErrorObject[]): ErrorObject | undefined {
  let best = errors[0];
  for (const e of errors) {
    if (best && e.instancePath.length > best.instancePath.length) best = e;
  }
  return best;
}

function describe(e: ErrorObject | undefined): string {
  if (e === undefined) return "is invalid";
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "additionalProperties":
      return `must not have the property "${String(p.additionalProperty)}" (this object is closed)`;
    case "required":
      return `must have the required property "${String(p.missingProperty)}"`;
    case "const":
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case "enum": {
      const allowed = p.allowedValues as unknown[];
      return allowed.length <= 12 ? `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}` : `must be one of the ${allowed.length} values the schema lists`;
    }
    default:
      return e.message ?? "is invalid";
  }
}
