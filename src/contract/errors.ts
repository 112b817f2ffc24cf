/** The codes a contract check can fail with (wire.md §14.2, plus the frame limit). */
export type ContractErrorCode =
  | "invalid_json"
  | "schema_validation"
  | "unsupported_required_version"
  | "unsupported_required_schema"
  | "binding_mismatch"
  | "frame_too_large";

/**
 * A rejected document: what rule failed, where (a JSON Pointer into the input, "" for the
 * whole document) and a sentence a person can act on.
 */
export interface ContractError {
  code: ContractErrorCode;
  path: string;
  message: string;
}

/** Something accepted but worth telling (for example wire.md O8: a not_run check without reasonCode). */
export interface ContractWarning {
  code: string;
  path: string;
  message: string;
}

export const contractError = (code: ContractErrorCode, path: string, message: string): ContractError => ({
  code,
  path,
  message,
});

/** Thrown only by APIs whose contract is to throw (encoders); decoders return errors as values. */
export class ContractViolation extends Error {
  constructor(readonly error: ContractError) {
    super(`${error.code} at ${error.path || "/"}: ${error.message}`);
    this.name = "ContractViolation";
  }
}

/** Appends one escaped reference token to a JSON Pointer (RFC 6901). */
export const pointer = (base: string, token: string | number): string =>
  `${base}/${String(token).replace(/~/g, "~0").replace(/\//g, "~1")}`;
