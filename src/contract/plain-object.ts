/** A JSON object: not null and not an array, which `typeof` alone would let through. */
export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
