import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  CONTEXT_ENV,
  DESCRIPTOR_FILE,
  HELPER_ENV,
  SECRET_ENV,
  helperPath,
} from "../../../src/harness/notification-env.js";
import { LocalRunnerClient } from "../../../src/runner/local-client.js";
import { until } from "../../support/until.js";

describe("runtime activity environment of an ACP agent", () => {
  it("the agent gets the runner's helper, descriptor and secret; --agent-env cannot override them, and its other variables pass", async () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-activity-acp-"));
    const envFile = join(dir, "agent-env.txt");
    // Not an ACP agent: a process that writes down the environment it was really given, then waits.
    const client = new LocalRunnerClient({
      runId: "run_acp_env",
      sessionId: "session_acp_env",
      runnerId: "runner_acp_env",
      extraArgs: [
        "--harness",
        "acp",
        "--agent-command",
        `sh -c 'env > ${envFile}.tmp && mv ${envFile}.tmp ${envFile}; exec sleep 60'`,
        "--agent-cwd",
        dir,
        "--agent-env",
        `${HELPER_ENV}=/tmp/not-the-runner`,
        "--agent-env",
        `${CONTEXT_ENV}=/tmp/not-the-runner.json`,
        "--agent-env",
        `${SECRET_ENV}=borrowed`,
        "--agent-env",
        "PRP_TEST_KEPT=yes",
        "--harness-ready-ms",
        "60000",
      ],
      onEvent: () => {},
      onReceipt: () => {},
      onBadLine: () => {},
    });
    try {
      client.send("run.prepare");
      await until(
        () => existsSync(envFile),
        () => `the agent to write its environment; runner stderr: ${client.stderrTail().join(" | ")}`,
        30_000,
      );
      const env = Object.fromEntries(
        readFileSync(envFile, "utf8")
          .split("\n")
          .filter((l) => l.includes("="))
          .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
      );
      assert.equal(env[HELPER_ENV], helperPath());
      assert.match(env[CONTEXT_ENV] ?? "", new RegExp(`^/.+/${DESCRIPTOR_FILE.replace(".", "\\.")}$`));
      assert.notEqual(env[CONTEXT_ENV], "/tmp/not-the-runner.json");
      assert.match(
        env[SECRET_ENV] ?? "",
        /^[A-Za-z0-9_-]{43}$/,
        "the runner's own secret for this harness, not the configured one",
      );
      assert.equal(env.PRP_TEST_KEPT, "yes", "other configured variables still pass");
    } finally {
      await client.terminate();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
