import { readdirSync, readFileSync } from "node:fs";

/**
 * Live processes of a process group, read from /proc: a zombie (state Z) has ended and only
 * waits to be reaped, so it does not count as a survivor.
 */
export function liveGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // the process ended while we looked
    }
    // Fields after the parenthesised command name: state ppid pgrp …
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(pgrp) === pgid && state !== "Z") members.push(Number(entry));
  }
  return members;
}
