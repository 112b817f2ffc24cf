/**
 * Where `bench:authority`'s CPU went, from the kernel's accounting rather than the bench's own
 * timers: the calling thread's CPU time (/proc/thread-self/stat), this process's (getrusage:
 * every thread, the runners' and V8's helpers too), and how busy the whole machine was
 * (/proc/stat, which also counts a PostgreSQL server sharing the cores). Linux only; elsewhere
 * the thread and machine figures are null.
 */
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";

/** Clock ticks per second of /proc's CPU times: USER_HZ, 100 on every Linux ABI Node runs on (no Node API reads sysconf). */
const USER_HZ = 100;

function readProc(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** The calling thread's user + system CPU in µs, or null. */
export function threadCpuMicros(): number | null {
  const stat = readProc("/proc/thread-self/stat");
  if (stat === null) return null;
  // After the command name, which may hold spaces and parentheses: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / USER_HZ;
}

/** Busy and total ticks over all cores. */
type Ticks = { busy: number; total: number };

function machineTicks(): Ticks | null {
  const stat = readProc("/proc/stat");
  if (stat === null) return null;
  // cpu user nice system idle iowait irq softirq steal: idle and iowait are not busy.
  const ticks = stat.split("\n", 1)[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  return { busy: total - ticks[3]! - ticks[4]!, total };
}

export interface CpuMark {
  process: NodeJS.CpuUsage;
  thread: number | null;
  machine: Ticks | null;
}

export interface CpuSpent {
  /** CPU µs of this process, every thread. */
  processMicros: number;
  /** CPU µs of the thread that took the mark, or null. */
  threadMicros: number | null;
  /** The machine's busy share, 0-1, or null. */
  machineBusy: number | null;
  cores: number;
}

export const cpuMark = (): CpuMark => ({
  process: process.cpuUsage(),
  thread: threadCpuMicros(),
  machine: machineTicks(),
});

export function cpuSince(mark: CpuMark): CpuSpent {
  const used = process.cpuUsage(mark.process);
  const thread = threadCpuMicros();
  const machine = machineTicks();
  return {
    processMicros: used.user + used.system,
    threadMicros: thread !== null && mark.thread !== null ? thread - mark.thread : null,
    machineBusy:
      machine && mark.machine && machine.total > mark.machine.total
        ? (machine.busy - mark.machine.busy) / (machine.total - mark.machine.total)
        : null,
    cores: availableParallelism(),
  };
}
