import type { FaultStep } from "./durable-run.js";
import type { SeededRandom } from "./seeded-random.js";

/**
 * Where a runner is SIGKILLed (runtime.md §5.10 runner-restart): by itself right after
 * committing event N to its outbox (before sending it), by itself right after journaling
 * command N (before its effect), or from outside once the authority has committed N events.
 */
export type KillPoint =
  { kind: "after-commit"; at: number } | { kind: "after-journal"; at: number } | { kind: "external"; at: number };

export const KILL_KINDS: ReadonlyArray<KillPoint["kind"]> = ["after-commit", "after-journal", "external"];

/**
 * The ranges a seeded point is drawn from, for the default happy-path run (19 events, 3
 * commands): every event up to the terminal, every opening command, and any commit before the
 * terminal's (the runner is still alive then, waiting for that terminal's ACK).
 */
const RANGES: Record<KillPoint["kind"], [number, number]> = {
  "after-commit": [1, 19],
  "after-journal": [1, 3],
  external: [1, 18],
};

export function drawKillPoint(random: SeededRandom, kind: KillPoint["kind"]): KillPoint {
  const [min, max] = RANGES[kind];
  return { kind, at: random.int(min, max) };
}

export function describeKillPoint(point: KillPoint): string {
  switch (point.kind) {
    case "after-commit":
      return `the runner SIGKILLs itself after committing event ${point.at} to its outbox, before sending it`;
    case "after-journal":
      return `the runner SIGKILLs itself after journaling command ${point.at}, before its effect`;
    case "external":
      return `the runner is SIGKILLed once the authority has committed ${point.at} event${point.at === 1 ? "" : "s"}`;
  }
}

/** What runDurable needs to kill the first runner at this point and start a replacement on its state. */
export function killPlan(point: KillPoint): { steps: FaultStep[]; crashAt?: string } {
  if (point.kind === "external") return { steps: [{ afterEvents: point.at, act: (ctx) => ctx.restartRunner() }] };
  return { steps: [], crashAt: `${point.kind}:${point.at}` };
}
