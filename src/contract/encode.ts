import { decodeValue } from "./decode.js";
import { ContractViolation } from "./errors.js";
import type { Kind, KindValues } from "./kinds.js";

/**
 * Serialises a document after checking it against the contract, so that nothing we emit is
 * something our own decoder would refuse. Throws ContractViolation on an invalid value.
 */
export function encode<K extends Kind>(value: KindValues[K], kind: K): string {
  const checked = decodeValue(value, { kind });
  if (!checked.ok) throw new ContractViolation(checked.error);
  return JSON.stringify(value);
}
