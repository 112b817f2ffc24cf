/** The PRP contract: codec, canonical JSON, digests, negotiation and the generated types. */
export { decode, decodeValue, type Decoded, type DecodeOptions } from "./decode.js";
export { encode } from "./encode.js";
export { admit, admitText, type Admission, type AdmittedKind } from "./admission.js";
export {
  canonicalJson,
  canonicalForm,
  canonicallyEqual,
  CANONICAL_MAX_DEPTH,
  CANONICAL_MAX_NODES,
} from "./canonical-json.js";
export { canonicalDigest, sha256Digest, sha256Hex, normaliseNewlines } from "./digest.js";
export { negotiate, LOCAL_RANGE, type Negotiated, type VersionRange } from "./negotiate.js";
export { ContractViolation, type ContractError, type ContractErrorCode, type ContractWarning } from "./errors.js";
export { ALL_KINDS, isKind, type Kind, type KindValues, type PrpCommand, type PrpEvent } from "./kinds.js";
export { questionSetRuleError, responseMismatch } from "./question-rules.js";
export * from "./versions.js";
export type * from "./generated/types.js";
