import type { ActivityRecorder } from "./activity/activity-endpoint.js";

/**
 * Points inside a run where a test harness may act (the fault framework, src/fault/, makes the
 * process kill itself there). Production passes none: a runner behaves the same without them.
 */
export interface RunnerHooks {
  /** Durable mode: event `sourceSeq` is committed to the outbox and not yet sent. */
  afterCommit?(sourceSeq: number): void;
  /** Durable mode: command `controllerSeq` is journaled and its effect not yet begun. */
  afterJournal?(controllerSeq: number): void;
  /** Durable mode: credential revision `revision` is committed with its baseline, its event not yet in the outbox. */
  afterCredential?(revision: number): void;
  /** Wraps the recorder of runtime activity (local and durable mode), to act around each record's commit. */
  activity?(record: ActivityRecorder): ActivityRecorder;
}
