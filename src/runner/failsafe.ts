import { cutTextMarked } from "../contract/text-cut.js";

/** The process events an error nothing handled arrives on (a `process`, or a stand-in in a test). */
export interface ErrorSource {
  on(event: "uncaughtException" | "unhandledRejection", listener: (err: unknown) => void): unknown;
}

export interface FailsafeOptions {
  /** Ends the run failed with this message as its diagnostic; it may throw if the runner is past saving. */
  failRun(message: string): void;
  /** Ends the process when the run cannot be failed cleanly (failRun threw, or a second error came). */
  exit(code: number): void;
  /** Where the whole error, stack included, goes for a person (stderr). */
  log(text: string): void;
  /** The exit status when the run could not be failed cleanly. */
  exitCode: number;
}

/** Diagnostics travel in events: the first line of the error, bounded. */
const MAX_MESSAGE_CHARS = 1_000;

export const describeError = (err: unknown): string => {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : `a thrown ${typeof err}: ${String(err)}`;
  return cutTextMarked(text, MAX_MESSAGE_CHARS);
};

/**
 * The runner process's last guard: an exception or rejection that nothing else handled ends the
 * run failed — a P0 `runner.diagnostic` `runner_internal_error` and a failed terminal whose
 * `stopReason.code` is `runner_internal_error` — instead of a stack trace and no terminal. Every
 * bad input has its own typed refusal; this is for the bugs that are left. If failing the run
 * throws as well, or a second error arrives while the first is being reported, the process ends
 * with `exitCode`, the error on stderr.
 */
export function installFailsafe(source: ErrorSource, options: FailsafeOptions): void {
  let failing = false;
  const handle = (err: unknown): void => {
    options.log(`internal error: ${err instanceof Error ? (err.stack ?? describeError(err)) : describeError(err)}`);
    if (failing) return options.exit(options.exitCode);
    failing = true;
    try {
      options.failRun(describeError(err));
    } catch (again) {
      options.log(`the run could not be failed cleanly: ${describeError(again)}`);
      options.exit(options.exitCode);
    }
  };
  source.on("uncaughtException", handle);
  source.on("unhandledRejection", handle);
}
