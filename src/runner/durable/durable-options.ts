import type { HeartbeatOptions, RunIdentity, Timers } from "../../transport/index.js";
import type { RunControllerOptions } from "../run-controller.js";
import type { RunnerHooks } from "../runner-hooks.js";

export interface DurableRunnerOptions extends Omit<RunControllerOptions, "runId" | "sessionId" | "coalesce"> {
  identity: RunIdentity;
  connectUrl: string;
  /** wss:// only: PEM certificates trusted besides Node's root store (`--ca-bundle-path`). */
  caBundle?: string;
  stateDir: string;
  /** The one-use ticket, from the environment only; discarded after the first welcome. */
  bootstrapToken: string | null;
  runnerVersion: string;
  runnerDigest: string;
  /** The highest protocol version this runner offers (default 3): its hello advertises 1–protocolMax. */
  protocolMax?: number;
  /** The contract digest this runner was built for, reported in every hello. */
  contractDigest?: string;
  maxOutboxBytes?: number;
  p0ReserveBytes?: number;
  reconnectDelayMs?: number;
  /**
   * After a stop signal, how long the runner goes on redialling to deliver the run's terminal
   * before it exits 3 with its state kept (default 30 s): an authority that keeps closing the
   * connection for a reason that might pass must not hold a stopped runner forever.
   */
  stopDeliveryMs?: number;
  /** The lease clock: lease expiry and when to renew; tests move it instead of waiting. */
  clock?: Timers;
  /** Dead-authority detection: its timeout and its own timers (not `clock`). */
  heartbeat?: HeartbeatOptions;
  /** Diagnostics for a person (stderr); never a secret. */
  log(text: string): void;
  /** Test points inside the run (runner-hooks.ts); none in production. */
  hooks?: RunnerHooks;
}

/** How a durable runner process ends; the exit code tells its supervisor what to do next. */
export type DurableOutcome =
  | { code: 0; reason: "run_delivered" | "suspended" }
  | {
      code: 3;
      reason:
        "lease_expired_requires_bootstrap" | "bootstrap_possibly_consumed" | "revoked" | "stopped_before_delivery";
    }
  | { code: 4; reason: "unrecoverable"; detail: string }
  /** The authority refused an event its outbox holds, and resending cannot change that: the run cannot be delivered. */
  | { code: 5; reason: "refused_by_authority"; detail: string }
  /** The wss:// authority's certificate did not verify: the runner never spoke to it, and its ticket is unspent. */
  | { code: 6; reason: "authority_untrusted"; detail: string }
  /** The authority refused this runner's contract at the hello: only another runner build can cure it, and the ticket is unspent. */
  | { code: 7; reason: "contract_mismatch"; detail: string };
