/** What the projection reads: the ACP wire in order, and what the driver did around it. */
export type AcpInput =
  /** The agent process started (its process group). */
  | { kind: "spawned"; pid: number }
  /** A JSON-RPC message the driver wrote to the agent. */
  | { kind: "sent"; message: unknown }
  /** A parsed JSON line the agent wrote. */
  | { kind: "received"; message: unknown }
  /** A stdout line that is not JSON. */
  | { kind: "unparsable"; text: string }
  /** The runner started a turn: projection is bound to it until it ends (seed 002 rule 1). */
  | { kind: "turn"; turnId: string }
  /** The runner queued a follow-up (turn.steer): the turn stays open for one more prompt once this one is answered. */
  | { kind: "follow_up" }
  /** The driver is cancelling the turn, and why (turn.interrupt, or run.cancel / stop). */
  | { kind: "cancelling"; why: "interrupt" | "cancel"; reason: string }
  /** Who answered a permission request or a question the driver is about to answer. */
  | { kind: "decided"; providerRequestId: unknown; by: "controller" | "policy"; policy?: string }
  /** The turn cannot be sent: the session did not start. */
  | { kind: "turn_refused"; message: string }
  /**
   * The agent process is gone; `exit` says how. `restartable`: it was killed by a signal the
   * driver did not send, so the runner may start a replacement that carries the turn on.
   */
  | { kind: "exited"; exit: string; restartable: boolean }
  /** The driver gave up on the agent (a deadline passed, its stdout broke): the run fails closed. */
  | { kind: "broken"; code: ViolationCode; message: string };

/** The run and session one projection is bound to (seed 002 rule 1). */
export interface ProjectionContext {
  runId: string;
  sessionId: string;
  /** The agent's working directory: diff paths are reported relative to it. */
  cwd: string;
  /** Which agent process of the run this is (1, then 2 after a restart): keeps item ids apart. */
  generation?: number;
  /**
   * The run's turn and item in durable mode, where the authority checks that a semantic
   * receipt's correlation is exactly the run identity. Without it (local mode) a receipt is
   * correlated to the bound turn and to the tool call's own PRP id as its item.
   */
  identity?: { turnId: string; itemId: string };
  /**
   * The `forbid` permission policy: the agent must never ask. A permission request or a question
   * that reaches the projection fails the run closed (seed 002 rule 9, as under upstream's
   * pinned Codex policy).
   */
  forbidRequests?: boolean;
}

/** Why the projection failed closed (seed 002 rule 9): the typed reason the run's terminal carries. */
export type ViolationCode =
  | "invalid_identity"
  | "identity_collision"
  | "unstable_receipt_identity"
  | "cross_turn_projection"
  | "request_forbidden"
  | "protocol_error"
  /** No answer to initialize, session/new or session/load in time, or nothing at all during a prompt for too long. */
  | "agent_timeout"
  /** The agent closed its stdout but went on running: it can never answer again. */
  | "agent_stdout_closed"
  /** A stdout line grew past the line limit without ending. */
  | "agent_line_too_long";
