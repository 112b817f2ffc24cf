import { readlinkSync } from "node:fs";
import { sep } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { argvOf, liveProcesses } from "../harness/live-processes.js";
import { ORPHAN_GUARD_NAME } from "../harness/orphan-guard.js";

/** Where to look for what a run left running. */
export interface RunProcessScope {
  /** The run's directory, an absolute path: its runners work in it, and their children inherit it. */
  dir: string;
  /** The run's runner pids: each led a group, and owned the orphan guards it started. */
  runnerPids: number[];
  /** Process groups the run reported (each harness.ready's pid leads its harness's group). */
  groups: number[];
}

interface ProcEntry {
  pid: number;
  pgrp: number;
  argv: string[];
  cwd: string | null;
}

/**
 * The live processes of a run, read from /proc (runtime.md §4.7: no harness, worker or guard
 * outlives its runner): any process working in the run's directory (a runner, its harness, a
 * worker the harness left behind with its environment cleared), any member of a runner's or a
 * reported harness's group (a worker that changed directory), and any orphan guard a runner of
 * the run started (its owner's pid is its first argument). A zombie has ended and does not
 * count; neither does this process. Each as "pid argv", for a person to act on.
 */
export function liveRunProcesses(scope: RunProcessScope): string[] {
  const groups = new Set([...scope.runnerPids, ...scope.groups]);
  const owners = new Set(scope.runnerPids.map(String));
  return procEntries()
    .filter((p) => p.pid !== process.pid)
    .filter(
      (p) =>
        (p.cwd !== null && (p.cwd === scope.dir || p.cwd.startsWith(scope.dir + sep))) ||
        groups.has(p.pgrp) ||
        owners.has(guardOwner(p.argv) ?? ""),
    )
    .map((p) => `${p.pid} ${p.argv.join(" ")}`);
}

/**
 * Waits, bounded, for the run's processes to be gone and returns what is still there: an orphan
 * guard acts on its owner's death, not before, so a survivor is only one once it had the time.
 */
export async function runSurvivors(scope: RunProcessScope, graceMs = 5_000): Promise<string[]> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    const live = liveRunProcesses(scope);
    if (live.length === 0 || Date.now() >= deadline) return live;
    await sleep(20);
  }
}

/** An orphan guard's owner pid: the argument after its name (`sh -c SCRIPT prp-orphan-guard <owner>`). */
function guardOwner(argv: string[]): string | undefined {
  return argv[3] === ORPHAN_GUARD_NAME ? argv[4] : undefined;
}

function procEntries(): ProcEntry[] {
  return liveProcesses().map(({ pid, pgrp }) => ({ pid, pgrp, argv: argvOf(pid), cwd: cwdOf(String(pid)) }));
}

/** A process's working directory; null when /proc will not say (another user's process). */
function cwdOf(pid: string): string | null {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return null;
  }
}
