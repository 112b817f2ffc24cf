import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { authorityFolder, killAll, startDaemon, runnerArgs, spawnRunnerd, type Daemon } from "./authority-processes.js";
import { eventLines, judgeRun } from "./authority-run.js";
import { adminJson, runPrp } from "./run-cli.js";
import { PATIENT_HARNESS } from "../support/scripts.js";

/** The deployable path: prp authority run create --observe-credentials, prp-runnerd --credential-file, prp events. */
describe("credential observation through prp authority serve", () => {
  let dir: string;
  let store: string[];
  const daemons: Daemon[] = [];
  before(() => {
    ({ dir, store } = authorityFolder("prp-credentials-authority-"));
  });
  after(async () => {
    await killAll(daemons);
    rmSync(dir, { recursive: true, force: true });
  });
  const admin = (args: string[]) => adminJson(store, args);

  for (const observe of [true, false]) {
    it(
      observe
        ? "a run created with --observe-credentials gets revisions 1 and 2 in its log"
        : "the same run created without it gets none (the twin)",
      async () => {
        const daemon = await startDaemon([...store, "--poll-ms", "50"]);
        daemons.push(daemon);
        const created = admin([
          "authority",
          "run",
          "create",
          "--json",
          "--script",
          "credentials-refresh",
          "--prompt",
          "Refresh.",
          ...(observe ? ["--observe-credentials"] : []),
        ]) as {
          runId: string;
          runnerArgs: string[];
          commands: Array<{ type: string; payload?: Record<string, unknown> }>;
        };
        const { ticket } = admin(["authority", "ticket", created.runId, "--json"]) as { ticket: string };
        const credentialFile = join(dir, created.runId, "codex-home", "auth.json");
        const runner = spawnRunnerd(
          [
            ...runnerArgs(created, daemon.url, join(dir, `runner-${created.runId}`)),
            ...PATIENT_HARNESS,
            "--credential-file",
            credentialFile,
            "--credential-provider",
            "codex",
          ],
          ticket,
          dir,
        );
        assert.equal(await runner.exited(), 0, runner.stderr());
        const events = eventLines(runPrp(["events", "--run", created.runId, "--json", ...store]).stdout);
        assert.deepEqual(judgeRun(events), { runTerminalState: "succeeded", problems: [] });
        const revisions = events
          .filter((e) => e.eventType === "auth.credentials.updated")
          .map((e) => (e.payload as { revision: number }).revision);
        assert.deepEqual(revisions, observe ? [1, 2] : []);
        const listed = runPrp(["events", "--run", created.runId, ...store]).stdout;
        assert.equal(listed.includes("acct-fake") || listed.includes("fake-access-token"), false);
        daemon.kill("SIGTERM");
        assert.equal(await daemon.exited(), 0, daemon.stderr());
      },
    );
  }
});
