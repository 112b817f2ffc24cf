import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Worker } from "node:worker_threads";
import { cpuMark, cpuSince, threadCpuMicros } from "../../bench/cpu.js";

/** Spins this thread until the process has used `ms` more CPU (bounded by the CPU, not a clock). */
function burn(ms: number): void {
  const start = process.cpuUsage();
  for (;;) {
    const used = process.cpuUsage(start);
    if (used.user + used.system >= ms * 1000) return;
  }
}

/** A worker that spins until the process has used `ms` more CPU, then exits. */
function burnOnAWorker(ms: number): Promise<void> {
  const source = `const start = process.cpuUsage(); for (;;) { const u = process.cpuUsage(start); if (u.user + u.system >= ${ms * 1000}) break; }`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(source, { eval: true });
    worker.once("error", reject);
    worker.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`the worker exited ${code}`))));
  });
}

// bench:authority splits its CPU by thread with these readings; they must count the calling thread only.
describe("bench CPU accounting by the kernel's count (bench/cpu.ts)", () => {
  it("counts this thread's own work", () => {
    const mark = cpuMark();
    burn(300);
    const spent = cpuSince(mark);
    assert.ok(
      spent.threadMicros !== null && spent.threadMicros >= 200_000,
      `this thread used ${spent.threadMicros} µs of a 300 ms burn`,
    );
    assert.ok(spent.processMicros >= 300_000);
    assert.ok(
      spent.machineBusy !== null && spent.machineBusy > 0 && spent.machineBusy <= 1,
      `machine busy ${spent.machineBusy}`,
    );
  });

  it("does not count another thread's work as this thread's, though the process's count has it", async () => {
    const mark = cpuMark();
    await burnOnAWorker(300);
    const spent = cpuSince(mark);
    assert.ok(spent.processMicros >= 300_000, `the process used ${spent.processMicros} µs`);
    assert.ok(
      spent.threadMicros !== null && spent.threadMicros < 150_000,
      `this thread, which only waited, used ${spent.threadMicros} µs`,
    );
    assert.notEqual(threadCpuMicros(), null);
  });
});
