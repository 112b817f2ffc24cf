import { readFileSync } from "node:fs";
import { liveGroupMembers, liveProcesses } from "../../src/harness/live-processes.js";

export { liveGroupMembers };

export function isLive(pid: number): boolean {
  return liveProcesses().some((p) => p.pid === pid);
}

/** A process's argv from /proc, or [] once it is gone. */
export function argvOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, -1);
  } catch {
    return [];
  }
}

/** Live children of `ppid` whose argv contains `word`. */
export function liveChildrenNamed(ppid: number, word: string): { pid: number; pgrp: number }[] {
  return liveProcesses()
    .filter((p) => p.ppid === ppid && argvOf(p.pid).includes(word))
    .map(({ pid, pgrp }) => ({ pid, pgrp }));
}

/** "pid argv" of each process, for a failure message. */
export function describeProcesses(pids: number[]): string {
  return pids.map((pid) => `${pid} ${argvOf(pid).join(" ")}`).join("; ") || "none";
}
