import { appendFileSync, existsSync, readFileSync, readlinkSync } from "node:fs";

/** This process's PID namespace as the kernel names it (`pid:[inode]`), or why it cannot say. */
export function pidNamespace(): string {
  try {
    return readlinkSync("/proc/self/ns/pid");
  } catch (err) {
    return `unknown (${(err as Error).message})`;
  }
}

/** Appends `pidns <namespace>` to `log`: an agent's own word on where it runs. */
export function recordPidNamespace(log: string): void {
  appendFileSync(log, `pidns ${pidNamespace()}\n`);
}

/**
 * Whether every agent process that wrote `log` ran in a PID namespace of its own (the harness
 * sandbox), judged from the namespaces they recorded against this test process's own: false
 * when any ran beside the test, or none recorded one.
 */
export function ranSandboxed(log: string): boolean {
  const host = pidNamespace();
  const seen = existsSync(log)
    ? readFileSync(log, "utf8")
        .split("\n")
        .filter((l) => l.startsWith("pidns "))
        .map((l) => l.slice("pidns ".length))
    : [];
  return host.startsWith("pid:") && seen.length > 0 && seen.every((ns) => ns.startsWith("pid:") && ns !== host);
}
