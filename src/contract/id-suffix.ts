import { randomBytes } from "node:crypto";

/**
 * The suffix of the ids of a new run (`run_<suffix>`, `session_<suffix>`, …): the UTC start
 * time to the second, so runs list in start order, then 24 random bits, so runs started in the
 * same second differ. For example `20260807210000_3fa2c1`.
 */
export const newIdSuffix = (): string =>
  `${new Date().toISOString().replace(/[-:T]/g, "").slice(0, 14)}_${randomBytes(3).toString("hex")}`;
