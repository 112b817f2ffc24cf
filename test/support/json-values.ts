import fc from "fast-check";

const hasProtoMember = (value: unknown): boolean =>
  value !== null &&
  typeof value === "object" &&
  (Object.hasOwn(value, "__proto__") || Object.values(value).some(hasProtoMember));

/**
 * fc.jsonValue without the member name `__proto__`, which fast-check generates on purpose and
 * the codec refuses (docs/contract.md, the codec): JSON data a PRP document may carry.
 */
export const codecJsonValue = (constraints: Parameters<typeof fc.jsonValue>[0] = {}): fc.Arbitrary<unknown> =>
  fc.jsonValue(constraints).filter((v) => !hasProtoMember(v));
