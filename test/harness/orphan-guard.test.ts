import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { describe, it } from "node:test";
import { ORPHAN_GUARD_NAME, OrphanGuard } from "../../src/harness/orphan-guard.js";
import { SupervisedProcess } from "../../src/harness/supervisor.js";
import { describeProcesses, isLive, liveChildrenNamed, liveGroupMembers, parentOf } from "../support/processes.js";
import { until } from "../support/until.js";

/** A harness of two processes in its group: the shell and a background sleep. */
const HARNESS = { command: "/bin/sh", args: ["-c", "sleep 60 & sleep 60"], onLine: () => {}, onOversize: () => {} };

/** Guards started by `owner` since `before` (a list of guard pids taken earlier). */
const newGuards = (owner: number, before: number[] = []) =>
  liveChildrenNamed(owner, ORPHAN_GUARD_NAME).filter((g) => !before.includes(g.pid));

const groupGone = (pgid: number, timeoutMs: number) =>
  until(
    () => liveGroupMembers(pgid).length === 0,
    () => `group ${pgid} to end; survivors: ${describeProcesses(liveGroupMembers(pgid))}`,
    timeoutMs,
  );

/** Ends what a failed test may have left; by pid and group id, each only if still there. */
function cleanUp(pgid: number | undefined, pids: number[]): void {
  if (pgid !== undefined && liveGroupMembers(pgid).length > 0) process.kill(-pgid, "SIGKILL");
  for (const pid of pids) if (isLive(pid)) process.kill(pid, "SIGKILL");
}

/**
 * A harness that has exited, its worker left behind: the fake harness's spawn_worker (a
 * `sh -c "sleep 60"` with its environment cleared) outlives the shell that started it and is
 * re-parented, still in the harness's group.
 */
const LEFT_WORKER = ["-c", 'env -i /bin/sh -c "sleep 60" & exit 0'];

describe("orphan guard", () => {
  /**
   * A Node owner supervises a harness of `args` and prints its group id; once `ready(group)`
   * holds, the owner is SIGKILLed and the whole group must be gone within 2 s.
   */
  async function ownerKilled(args: string[], ready: (group: number) => boolean, what: string): Promise<void> {
    const supervisor = new URL("../../src/harness/supervisor.js", import.meta.url).href;
    const code = `const { SupervisedProcess } = await import(${JSON.stringify(supervisor)});
      const h = new SupervisedProcess({ command: "/bin/sh", args: ${JSON.stringify(args)}, onLine() {}, onOversize() {} });
      console.log(h.pid);
      setInterval(() => {}, 60_000);`;
    const owner = spawn(process.execPath, ["--input-type=module", "-e", code], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const ownerExit = once(owner, "exit");
    let pgid: number | undefined;
    let guards: { pid: number; pgrp: number }[] = [];
    try {
      const printed = once(createInterface({ input: owner.stdout }), "line") as Promise<[string]>;
      const [first] = await Promise.race([
        printed,
        ownerExit.then(() => Promise.reject(new Error("the owner exited before it printed the harness group"))),
      ]);
      pgid = Number(first);
      const group = pgid;
      await until(() => ready(group), what);
      guards = newGuards(owner.pid!);
      assert.equal(guards.length, 1, "the owner started one guard");
      assert.equal(
        guards[0]!.pgrp,
        guards[0]!.pid,
        "the guard leads a group of its own, neither the harness's nor the owner's",
      );

      owner.kill("SIGKILL");
      await groupGone(group, 2_000);
      const [, signal] = await ownerExit;
      assert.equal(signal, "SIGKILL");
      await until(() => !isLive(guards[0]!.pid), "the guard to exit after acting");
    } finally {
      cleanUp(pgid, [owner.pid!, ...guards.map((g) => g.pid)]);
    }
  }

  it("ends the harness group within 2 s when its owner is SIGKILLed", async () => {
    await ownerKilled(
      HARNESS.args,
      (group) => liveGroupMembers(group).length >= 2,
      "the harness shell and its background sleep",
    );
  });

  it("ends a worker the harness left behind, re-parented after the harness exited, when the owner is SIGKILLed", async () => {
    // The leader (the group's id) has exited; its worker lives on in the group, no longer its child.
    await ownerKilled(
      LEFT_WORKER,
      (group) =>
        !isLive(group) &&
        liveGroupMembers(group).length > 0 &&
        liveGroupMembers(group).every((pid) => parentOf(pid) !== group),
      "the harness to exit, its worker re-parented and alive in its group",
    );
  });

  it("is released by terminate(): the guard exits and none is left", async () => {
    const before = newGuards(process.pid).map((g) => g.pid);
    const proc = new SupervisedProcess(HARNESS);
    let guards: { pid: number }[] = [];
    try {
      await until(() => liveGroupMembers(proc.pid).length >= 2, "the harness shell and its background sleep");
      guards = newGuards(process.pid, before);
      assert.equal(guards.length, 1, "one guard per supervised group");
      await proc.terminate();
      assert.deepEqual(liveGroupMembers(proc.pid), []);
      await until(() => !isLive(guards[0]!.pid), "the released guard to exit");
    } finally {
      cleanUp(
        proc.pid,
        guards.map((g) => g.pid),
      );
    }
  });

  it("is released when the leader exits as the last process of its group, with no terminate()", async () => {
    const before = newGuards(process.pid).map((g) => g.pid);
    const proc = new SupervisedProcess({ ...HARNESS, args: ["-c", "read line"] });
    const guards = newGuards(process.pid, before);
    try {
      assert.equal(guards.length, 1, "one guard per supervised group");
      proc.closeStdin(); // `read` ends: the group's only process exits
      await proc.exited;
      await until(() => !isLive(guards[0]!.pid), "the guard to be released at the leader's exit");
    } finally {
      cleanUp(
        proc.pid,
        guards.map((g) => g.pid),
      );
    }
  });

  it("released, exits without killing the group it was armed with", async () => {
    const sleeper = spawn("sleep", ["60"], { detached: true, stdio: "ignore" });
    const before = newGuards(process.pid).map((g) => g.pid);
    const guard = OrphanGuard.start();
    const guards = newGuards(process.pid, before);
    try {
      assert.equal(guards.length, 1);
      guard.arm(sleeper.pid!);
      guard.release();
      await until(() => !isLive(guards[0]!.pid), "the released guard to exit");
      assert.deepEqual(liveGroupMembers(sleeper.pid!), [sleeper.pid], "the group is untouched");
    } finally {
      sleeper.kill("SIGKILL");
      cleanUp(
        undefined,
        guards.map((g) => g.pid),
      );
    }
  });
});
