/**
 * Every live process group this process started. Whatever way this process ends — normal exit,
 * an uncaught exception, process.exit() — the groups still registered are sent SIGKILL from the
 * 'exit' hook, so no harness or worker outlives its runner. (Signals are handled by the runner,
 * which terminates gracefully and then exits through this same hook. SIGKILL runs no hook: the
 * orphan guard of each group covers that, see orphan-guard.ts.)
 */
const live = new Set<number>();
let hooked = false;

export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // ESRCH: no process is left in the group
  }
}

export function groupAlive(pgid: number): boolean {
  return signalGroup(pgid, 0 as unknown as NodeJS.Signals);
}

export function registerGroup(pgid: number): void {
  live.add(pgid);
  if (!hooked) {
    hooked = true;
    process.on("exit", () => {
      for (const g of live) signalGroup(g, "SIGKILL");
    });
  }
}

export function releaseGroup(pgid: number): void {
  live.delete(pgid);
}
