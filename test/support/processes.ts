import { argvOf, liveGroupMembers, liveProcesses } from "../../src/harness/live-processes.js";

export { argvOf, liveGroupMembers };

/** A live process's parent pid, or undefined once it is gone. */
export function parentOf(pid: number): number | undefined {
  return liveProcesses().find((p) => p.pid === pid)?.ppid;
}

export function isLive(pid: number): boolean {
  return liveProcesses().some((p) => p.pid === pid);
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
