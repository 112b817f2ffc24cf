import { readdirSync, readFileSync } from "node:fs";

export interface ProcessEntry {
  pid: number;
  ppid: number;
  pgrp: number;
}

/**
 * Live processes, read from /proc: a zombie (state Z) has ended and only waits to be reaped,
 * so it does not count. This is the kernel's record, independent of what any runner says.
 */
export function liveProcesses(): ProcessEntry[] {
  const found: ProcessEntry[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // the process ended while we looked
    }
    // Fields after the parenthesised command name: state ppid pgrp …
    const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (state !== "Z") found.push({ pid: Number(entry), ppid: Number(ppid), pgrp: Number(pgrp) });
  }
  return found;
}

/** Live processes of a process group. */
export function liveGroupMembers(pgid: number): number[] {
  return liveProcesses()
    .filter((p) => p.pgrp === pgid)
    .map((p) => p.pid);
}

/** A process's argv from /proc, or [] once it is gone. */
export function argvOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, -1);
  } catch {
    return [];
  }
}
