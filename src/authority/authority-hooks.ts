/**
 * Points inside the authority where a test harness may act (the fault framework, src/fault/,
 * loses an ACK or sends a command the queue would never send). Production passes none: the
 * server behaves the same without them.
 */
export interface AuthorityHooks {
  /** A runner's connection was accepted as its run's live one. */
  connected?(runId: string, connection: HookedConnection): void;
  /** Before each ACK is sent: `drop` closes the connection instead, so the runner never hears it. */
  beforeAck?(runId: string, ackedSourceSeq: number): "send" | "drop";
}

/** A run's connection, as a hook may use it. */
export interface HookedConnection {
  readonly connectionId: string;
  /** Whether it is still its run's live connection. */
  live(): boolean;
  /** Sends a command envelope carrying `command` as it is, checked by nothing. */
  sendCommand(command: unknown): boolean;
}
