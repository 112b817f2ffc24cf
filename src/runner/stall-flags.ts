/** A run's stall limit and grace as prp-runnerd flags take them; absent ones leave the runner's defaults (stall-watch.ts). */
export interface StallFlags {
  stallLimitMs?: number;
  stallGraceMs?: number;
}

/** The runner limits of the stall flags that were given. */
export const stallLimits = (flags: StallFlags): StallFlags => ({
  ...(flags.stallLimitMs !== undefined ? { stallLimitMs: flags.stallLimitMs } : {}),
  ...(flags.stallGraceMs !== undefined ? { stallGraceMs: flags.stallGraceMs } : {}),
});

/** The prp-runnerd flags for the stall flags that were given. */
export const stallArgs = (flags: StallFlags): string[] =>
  Object.entries(stallLimits(flags)).flatMap(([key, ms]) => [
    key === "stallLimitMs" ? "--stall-limit-ms" : "--stall-grace-ms",
    String(ms),
  ]);
