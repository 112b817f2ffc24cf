import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Writable } from "node:stream";

/** The name the guard shows in `ps` and /proc (its `$0`). */
export const ORPHAN_GUARD_NAME = "prp-orphan-guard";

/*
 * The guard reads the group id, then blocks on its stdin. A "release" line means the group was
 * ended and reaped by its owner: exit without touching it (its id may be reused from then on).
 * End of file without that line means the owner died — a SIGKILL runs no exit hook — so the
 * guard kills the group. dash refuses `kill -KILL -- -N`; `kill -s KILL -- -N` is POSIX and
 * works. A group id of 1 or less is refused: `kill -- -1` would reach every process we may signal.
 */
const SCRIPT = [
  "read -r pgid || exit 0",
  'case $pgid in ""|*[!0-9]*) exit 2;; esac',
  '[ "$pgid" -gt 1 ] || exit 2',
  'if read -r word && [ "$word" = release ]; then exit 0; fi',
  'kill -s KILL -- "-$pgid" 2>/dev/null',
].join("\n");

/**
 * A watcher that ends a process group when the process that owns it dies without ending it
 * (runtime.md §4.7: no harness outlives its runner). Node cannot ask the kernel for a
 * parent-death signal, so the guard is a separate process holding a pipe from the owner: the
 * kernel closes the pipe whatever way the owner ends.
 *
 * It is `/bin/sh` (dash) and not a Node script because one runs per supervised group, blocked
 * in a read for the group's whole life: dash starts in about a millisecond and holds under 2 MiB,
 * a Node process takes tens of milliseconds to start and about 40 MiB. It runs detached, in a group and session of its own, so killing the owner's
 * group or the guarded group does not kill the guard before it acts. Only the owner holds the
 * pipe's write end: Node opens child pipes close-on-exec, so no other child inherits it.
 */
export class OrphanGuard {
  private state: "idle" | "armed" | "released" = "idle";

  private constructor(private readonly child: ChildProcessByStdio<Writable, null, null>) {}

  /**
   * Starts a guard before the group it will watch exists, so that arming it right after the
   * group's spawn is one pipe write (libuv writes at once to an empty pipe). The one window in
   * which the group is not guarded is a SIGKILL during that spawn call (from the fork to the
   * exec it waits for) or before the write that follows it.
   */
  static start(): OrphanGuard {
    // $0 names the guard and $1 its owner, in `ps` and /proc: what a guard left behind belongs to.
    const child = spawn("/bin/sh", ["-c", SCRIPT, ORPHAN_GUARD_NAME, String(process.pid)], {
      cwd: "/",
      env: {},
      detached: true,
      stdio: ["pipe", "ignore", "ignore"],
    });
    if (child.pid === undefined) throw new Error("cannot start the orphan guard /bin/sh");
    child.on("error", () => {}); // reported by the pid check above
    child.stdin.on("error", () => {}); // a guard that is gone closes the pipe; writes then fail harmlessly
    child.unref(); // the guard never keeps its owner alive; it is reaped when it exits
    return new OrphanGuard(child);
  }

  /** Watches the group `pgid` from now on. */
  arm(pgid: number): void {
    if (this.state !== "idle") return;
    this.state = "armed";
    this.child.stdin.write(`${pgid}\n`);
  }

  /**
   * Tells the guard to exit without killing: call it once the group is gone, so that a guard
   * never outlives the group whose id it holds. Idempotent.
   */
  release(): void {
    if (this.state === "released") return;
    // Unarmed, plain end of file: the guard has no group to kill and exits.
    this.child.stdin.end(this.state === "armed" ? "release\n" : undefined);
    this.state = "released";
  }
}
