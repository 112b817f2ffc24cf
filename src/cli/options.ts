import { InvalidArgumentError } from "commander";

/** commander parsers that refuse bad numbers with a message, instead of passing NaN on. */
export function parseNonNegativeInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError(`expected a whole number ≥ 0, got "${value}"`);
  return n;
}

export function parsePositiveInt(value: string): number {
  const n = parseNonNegativeInt(value);
  if (n === 0) throw new InvalidArgumentError("expected a whole number ≥ 1, got 0");
  return n;
}
