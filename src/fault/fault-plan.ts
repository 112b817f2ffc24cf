import type { Script } from "../harness/fake-harness.js";
import type { DurableRunFacts, FaultStep } from "./durable-run.js";
import type { SeededRandom } from "./seeded-random.js";

/** What a fault does to one run, once its random choices are made. */
export interface FaultPlan {
  steps: FaultStep[];
  /** Where the first runner kills itself (`after-commit:N`, `after-journal:N`). */
  crashAt?: string;
  /** The chosen kill point, for the report. */
  chosen?: string;
}

/** Every random choice comes from `random`; `at` is an exact point the caller asked for (--at). */
export interface FaultChoice {
  random: SeededRandom;
  at?: number;
  /** The script the run plays, for a fault whose point depends on it. */
  script?: Script;
}

export interface Fault {
  describe: string;
  plan: (choice: FaultChoice) => FaultPlan;
  /** Whether `--at N` names this fault's point. */
  takesAt?: boolean;
  /** Whether the run still ends with a committed terminal (a revoked or suspended runner stops before). */
  terminal?: boolean;
  /**
   * Whether the harness may stop before its script ends (its runner was killed, revoked or
   * suspended): the script's events must then arrive as a prefix, with no hole.
   */
  cutsHarnessShort?: boolean;
  /** Whether the first runner must die by SIGKILL: the kill point was reached. */
  killsRunner?: boolean;
  /** Event types the fault must leave in the committed stream. */
  shows?: string[];
  /** The last runner process's exit code. */
  runnerExit?: number;
  /** The scenario the fault needs, unless --script names another. */
  script?: string;
  /** Why the fault cannot be injected into a run of this script, or null. */
  refusesScript?: (script: Script) => string | null;
  /** Overrides --delay-ms: the fault needs the run to last. */
  delayMs?: number;
  /** Relaunch a runner that exits 3, as a controller does after a lease expiry. */
  relaunchAfterLeaseExpiry?: boolean;
  /** Extra prp-runnerd flags (a smaller outbox). */
  runnerArgs?: string[];
  /** The outbox limit the runner's recorded peak is held to. */
  maxOutboxBytes?: number;
  /**
   * A fault's own check of the committed stream: why it fails, or null. A fault with its own
   * script checks this only when the run plays that script.
   */
  check?: (facts: DurableRunFacts) => string | null;
}
