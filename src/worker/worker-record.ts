import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";

/** The worker's own record of its runners, beside their state: `<dir>/started.jsonl`. */
export const RECORD_FILE = "started.jsonl";

export type RecordLine =
  | { kind: "starting"; runId: string; attempt: number; startedAt: string }
  | { kind: "started"; runId: string; attempt: number; pid: number; startedAt: string }
  | { kind: "exited"; runId: string; exitCode: number | null; signal: string | null; exitedAt: string };

/**
 * Appends one JSON line per fact and fsyncs it before returning: a `starting` line is on disk
 * before its runner is spawned, so a crash of the worker never leaves a runner it has no record
 * of. It is an account independent of the authority's, which a test can judge the worker by. It
 * never holds a ticket.
 */
export class WorkerRecord {
  readonly path: string;

  constructor(dir: string) {
    this.path = join(dir, RECORD_FILE);
  }

  append(line: RecordLine): void {
    const fd = openSync(this.path, "a", 0o600);
    try {
      writeSync(fd, `${JSON.stringify(line)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}
