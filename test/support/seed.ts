/**
 * The seed of every property test outside the fuzz suite: fixed by default so a failure
 * repeats, `PRP_TEST_SEED` to explore. Each property prints the seed it ran with.
 */
export const TEST_SEED = Number(process.env.PRP_TEST_SEED ?? 20261130);

/** fast-check parameters for one property: the seed (printed with `label`) and the case count. */
export function seeded(label: string, numRuns?: number): { seed: number; numRuns?: number } {
  console.log(`# property ${label}: seed ${TEST_SEED}`);
  return numRuns === undefined ? { seed: TEST_SEED } : { seed: TEST_SEED, numRuns };
}
