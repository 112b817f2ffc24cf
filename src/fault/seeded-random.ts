import { randomInt } from "node:crypto";

/** The largest seed: seeds are unsigned 32-bit integers. */
export const MAX_SEED = 0xffff_ffff;

/** A reproducible source of choices: the same seed makes the same choices. */
export interface SeededRandom {
  readonly seed: number;
  /** A whole number from `min` to `max`, both included. */
  int(min: number, max: number): number;
}

/** A seed for a run that was not given one; print it so the run can be repeated. */
export function drawSeed(): number {
  return randomInt(0, MAX_SEED + 1);
}

/**
 * mulberry32: a small, fast 32-bit generator. Fault runs draw a handful of kill points, so
 * statistical quality matters less than being exact and repeatable on every platform.
 */
export function seededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return {
    seed,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
  };
}
