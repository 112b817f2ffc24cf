import { isPlainObject } from "../../../contract/plain-object.js";

/** A JSON object as it came off the wire. */
export type Obj = Record<string, unknown>;

export const isObj: (v: unknown) => v is Obj = isPlainObject;

/** A JSON-RPC id as a map key: the number 5 and the string "5" stay apart. */
export const key = (id: unknown): string => JSON.stringify(id ?? null);

/** A provider identity PRP can carry (seed 002 rule 9): a JSON-RPC id is a string or an integer; a string is 1..240 characters without control characters. */
export const validProviderId = (id: unknown): boolean =>
  (typeof id === "number" && Number.isSafeInteger(id)) ||
  (typeof id === "string" && id.length > 0 && id.length <= 240 && !/[\u0000-\u001f\u007f]/.test(id));
