import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_SHUTDOWN_GRACE_MS, SupervisedProcess } from "../../src/harness/supervisor.js";
import { liveGroupMembers } from "../support/processes.js";

const node = (code: string, extra: Partial<ConstructorParameters<typeof SupervisedProcess>[0]> = {}) => {
  const lines: string[] = [];
  const oversize: number[] = [];
  const proc = new SupervisedProcess({
    command: process.execPath,
    args: ["-e", code],
    onLine: (l) => lines.push(l),
    onOversize: (b) => oversize.push(b),
    ...extra,
  });
  return { proc, lines, oversize };
};

describe("process supervisor", () => {
  it("clears the environment to PATH plus what the caller passes", async () => {
    process.env.PRP_TEST_SECRET = "must-not-leak";
    const { proc, lines } = node("console.log(JSON.stringify(Object.keys(process.env).sort()))", {
      env: { GIVEN: "1" },
    });
    await proc.exited;
    await proc.stdoutEnded;
    await proc.terminate();
    delete process.env.PRP_TEST_SECRET;
    assert.deepEqual(JSON.parse(lines[0]!), ["GIVEN", "PATH"]);
  });

  it("reports the exit fact", async () => {
    const { proc } = node("process.exit(7)");
    const fact = await proc.exited;
    await proc.terminate();
    assert.deepEqual(fact, { exitCode: 7, signal: null, success: false });
  });

  it("runs the child in its own group and ends every process of it, TERM then KILL", async () => {
    // The leader ignores SIGTERM and has a grandchild; both must be gone after terminate().
    const { proc, lines } = node(
      "process.on('SIGTERM',()=>{});require('child_process').spawn('/bin/sh',['-c','sleep 60'],{stdio:'ignore'});console.log('up');setInterval(()=>{},1000)",
      { graceMs: 50 },
    );
    while (lines.length === 0) await new Promise((r) => setTimeout(r, 10));
    assert.ok(liveGroupMembers(proc.pid).length >= 2, "leader and grandchild run in the child's group");
    const fact = await proc.terminate();
    assert.equal(fact.signal, "SIGKILL");
    assert.deepEqual(liveGroupMembers(proc.pid), []);
  });

  it("gives a leader that ignores SIGTERM the default grace of 100 ms before SIGKILL (runtime.md §4.7)", async () => {
    assert.equal(DEFAULT_SHUTDOWN_GRACE_MS, 100);
    const { proc, lines } = node("process.on('SIGTERM',()=>{});console.log('up');setInterval(()=>{},1000)");
    while (lines.length === 0) await new Promise((r) => setTimeout(r, 10));
    const start = Date.now();
    const fact = await proc.terminate();
    assert.ok(Date.now() - start >= DEFAULT_SHUTDOWN_GRACE_MS, `ended after ${Date.now() - start} ms`);
    assert.equal(fact.signal, "SIGKILL");
  });

  it("kills workers left behind even after a clean exit", async () => {
    const { proc } = node("require('child_process').spawn('/bin/sh',['-c','sleep 60'],{stdio:'ignore'}).unref()");
    const fact = await proc.exited;
    assert.equal(fact.success, true);
    assert.ok(liveGroupMembers(proc.pid).length >= 1, "the worker outlived its parent");
    await proc.terminate();
    assert.deepEqual(liveGroupMembers(proc.pid), []);
  });

  it("reports an oversized stdout line and turns an oversized stderr line into a short marker", async () => {
    const { proc, lines, oversize } = node(
      "process.stdout.write('x'.repeat(70000)+'\\nok\\n');process.stderr.write('y'.repeat(70000)+'\\nwarn\\n')",
    );
    await proc.exited;
    await proc.stdoutEnded;
    await proc.terminate();
    assert.deepEqual(oversize, [70000]);
    assert.deepEqual(lines, ["ok"]);
    const log = proc.log.snapshot().lines;
    assert.match(log[0]!, /^\[stderr line of 70000 bytes over the 65536-byte limit, dropped\]$/);
    assert.equal(log[1], "warn");
  });
});
