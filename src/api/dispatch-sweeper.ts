import type { DispatchPart } from "../authority/store.js";
import type { DispatchSettings } from "./context.js";

export const DEFAULT_DISPATCH: DispatchSettings = { heartbeatMs: 5_000, graceMs: 30_000, maxAttempts: 3 };

export interface SweeperOptions {
  store: Pick<DispatchPart, "sweepWorkers">;
  settings: DispatchSettings;
  now: () => number;
  /** Something was taken back or ended: held polls may claim now. */
  changed: () => void;
  onError: (err: Error) => void;
}

/**
 * Takes back the claims of silent workers, a few times per grace. Every authority instance runs
 * one: a sweep is one idempotent transaction per store, so two at once change each row once.
 */
export function startSweeper(options: SweeperOptions): { stop(): void } {
  let running = false;
  const timer = setInterval(
    () => {
      if (running) return;
      running = true;
      options.store
        .sweepWorkers(options.now(), options.settings.graceMs, options.settings.maxAttempts)
        .then((changed) => {
          if (changed.length > 0) options.changed();
        })
        .catch((err: unknown) => options.onError(err instanceof Error ? err : new Error(String(err))))
        .finally(() => {
          running = false;
        });
    },
    Math.max(100, Math.floor(options.settings.graceMs / 4)),
  );
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
