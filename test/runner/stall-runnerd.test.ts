import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { scenariosDir } from "../../src/harness/script-file.js";
import { LocalRunnerClient } from "../../src/runner/local-client.js";
import { AT } from "../contract/samples.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";

const runnerd = (args: string[]) =>
  spawnSync(process.execPath, [join(packageRoot(), "bin/prp-runnerd.js"), ...args], { encoding: "utf8" });

describe("prp-runnerd --stall-limit-ms / --stall-grace-ms", () => {
  it("refuses a value that is not a whole number ≥ 0, naming the flag (exit 2)", () => {
    for (const [flag, value] of [
      ["--stall-limit-ms", "-1"],
      ["--stall-limit-ms", "soon"],
      ["--stall-grace-ms", "1.5"],
      ["--stall-limit-ms", "604800001"],
    ]) {
      const res = runnerd(["--local", flag!, value!]);
      assert.equal(res.status, 2, `${flag} ${value}: ${res.stderr}`);
      assert.match(res.stderr, new RegExp(`${flag} <n>' argument '${value}' is invalid`));
    }
  });

  it("a run silent past the limit ends with stopReason stalled, on the stream the runner writes", async () => {
    const events: PrpEvent[] = [];
    const client = new LocalRunnerClient({
      runId: "run_stall",
      sessionId: "session_stall",
      runnerId: "runner_stall",
      scriptPath: join(scenariosDir(), "interrupted.json"),
      delayMs: 0,
      extraArgs: [...PATIENT_HARNESS, "--stall-limit-ms", "300", "--stall-grace-ms", "5000"],
      onEvent: (e) => events.push(e),
      onReceipt: () => {},
      onBadLine: (l) => assert.fail(`a line that is not a record: ${l}`),
    });
    try {
      ["run.prepare", "session.open", "turn.start"].forEach((type, i) =>
        client.sendRaw(
          JSON.stringify({
            schema: "paperclip.prp.command.v1",
            commandId: `c${i + 1}`,
            controllerSeq: i + 1,
            type,
            issuedAt: AT,
            payload: {},
          }),
        ),
      );
      await until(
        () => events.some((e) => e.eventType === "run.terminal"),
        () => `the terminal; the runner wrote ${events.map((e) => e.eventType).join(", ")}`,
      );
      const stalled = events.find((e) => e.eventType === "runner.diagnostic");
      assert.equal((stalled?.payload as Record<string, unknown>).code, "run_stalled");
      assert.equal((stalled?.payload as Record<string, unknown>).limitMs, 300);
      const terminal = events.find((e) => e.eventType === "run.terminal")!.payload as Record<string, any>;
      assert.equal(terminal.stopReason?.code, "stalled");
      assert.equal(terminal.turnTerminalState, "interrupted");
    } finally {
      client.close();
      await client.exited();
    }
  });
});
