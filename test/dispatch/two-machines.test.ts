import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { makeTestCertificates } from "../support/certificates.js";
import { until } from "../support/until.js";
import { killAll, spawnPrp, startDaemon, type Child } from "../cli/authority-processes.js";
import { runPrp } from "../cli/run-cli.js";
import { launchChromium, type Browser } from "../console/browser.js";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { judgeExactlyOnce } from "./judges.js";
import {
  addToken,
  addWorker,
  killPids,
  openStoreOf,
  startWorker,
  storedRecords,
  unfinishedRunnerPids,
  workerStarts,
  type StoreFlags,
  type WorkerProcess,
} from "./support.js";

const root = mkdtempSync(join(tmpdir(), "prp-dispatch-machines-"));
after(() => rmSync(root, { recursive: true, force: true }));

/**
 * The authority's machine is 127.0.0.2 (wss:// and https:// with a test CA); the worker and the
 * person submitting reach it across addresses with that CA only, as from other machines.
 */
describe("prp submit on one machine, prp worker on another", () => {
  it("runs an ACP agent's run, and the console shows runs live", async () => {
    const certs = makeTestCertificates(root, ["127.0.0.2"]);
    const keyFile = join(root, "secrets", "key");
    assert.equal(runPrp(["authority", "key", "--out", keyFile]).status, 0);
    const location = `sqlite:${join(root, "store")}`;
    const store: StoreFlags = { flags: ["--store", location, "--server-key-file", keyFile], location, keyFile };
    const consoleUrlFile = join(root, "console-url");
    const children: Child[] = [];
    const workers: WorkerProcess[] = [];
    let browser: Browser | undefined;
    try {
      const daemon = await startDaemon([
        ...store.flags,
        "--listen",
        "127.0.0.2:0",
        "--api",
        "127.0.0.2:0",
        "--tls-cert",
        certs.serverCert,
        "--tls-key",
        certs.serverKey,
        "--console",
        "--console-url-file",
        consoleUrlFile,
      ]);
      children.push(daemon);
      assert.match(daemon.url, /^wss:\/\/127\.0\.0\.2:\d+$/);
      await until(() => /\napi: https:\/\/127\.0\.0\.2:\d+\n/.test(daemon.stdout()), "the API's https URL");
      const apiUrl = /\napi: (\S+)\n/.exec(daemon.stdout())![1]!;
      const token = addToken(store, "operate", root);
      const worker = startWorker(
        {
          apiUrl,
          credential: addWorker(store, "remote-1", root),
          dir: join(root, "remote-1"),
          name: "remote-1",
          labels: "os=linux",
          maxRuns: 2,
        },
        ["--ca-bundle-path", certs.caCert],
      );
      workers.push(worker);
      children.push(worker);
      const submitter = join(root, "submitter");
      mkdirSync(submitter);
      const submit = (args: string[], labels = "os=linux") =>
        spawnPrp([
          "submit",
          "--api",
          apiUrl,
          "--ca-bundle-path",
          certs.caCert,
          "--token-file",
          token,
          "--labels",
          labels,
          ...args,
        ]);
      const agentRun = submit([
        "--agent-command",
        testAgentCommand("streamed-answer"),
        "--prompt",
        "Say hello.",
        "--wait",
        "--json",
      ]);
      children.push(agentRun);
      assert.equal(await agentRun.exited(180_000), 0, `${agentRun.stderr()}\nworker: ${worker.stderr()}`);
      const run = JSON.parse(agentRun.stdout()) as { run: { runId: string; state: string; terminalState: string } };
      assert.equal(run.run.state, "ended");
      assert.equal(run.run.terminalState, "succeeded");

      // An agent that works until it is cancelled: live in the console until then.
      const live = submit(["--agent-command", testAgentCommand("working"), "--prompt", "Work.", "--json"]);
      assert.equal(await live.exited(), 0, live.stderr());
      const liveId = (JSON.parse(live.stdout()) as { run: { runId: string } }).run.runId;
      browser = await launchChromium();
      const page = await browser.context.newPage();
      await page.goto(readFileSync(consoleUrlFile, "utf8").trim());
      const row = page.locator(`tr[data-run-id="${liveId}"]`);
      await row.locator(".state-live").waitFor({ timeout: 60_000 });
      await page.locator(`tr[data-run-id="${run.run.runId}"] .state-succeeded`).waitFor({ timeout: 60_000 });
      const cancel = runPrp(["authority", "command", liveId, "run.cancel", ...store.flags]);
      assert.equal(cancel.status, 0, cancel.stderr);
      await row.locator(".state-cancelled").waitFor({ timeout: 60_000 });

      // A run no worker can take: queued in the console, with why; cancelled while queued.
      const waiting = submit(["--script", "happy-path", "--prompt", "Wait for a GPU.", "--json"], "gpu=a100");
      children.push(waiting);
      assert.equal(await waiting.exited(), 0, waiting.stderr());
      const waitingId = (JSON.parse(waiting.stdout()) as { run: { runId: string } }).run.runId;
      const queuedRow = page.locator(`tr[data-run-id="${waitingId}"]`);
      await queuedRow.locator(".state-queued").waitFor({ timeout: 60_000 });
      assert.match((await queuedRow.locator(".state-note").textContent()) ?? "", /no worker with gpu=a100/);
      const cancelQueued = runPrp(["authority", "runs", ...store.flags]);
      assert.match(cancelQueued.stdout, new RegExp(`${waitingId}  queued \\(no worker with gpu=a100\\)`));

      const reader = await openStoreOf(store);
      try {
        const runIds = [run.run.runId, liveId];
        const { logs, dispatch } = await storedRecords(reader, runIds);
        assert.deepEqual(judgeExactlyOnce(runIds, logs, workerStarts(workers), dispatch), []);
        const connections = await reader.runnerConnections(run.run.runId);
        assert.equal(connections.length, 1, "one runner served the agent's run");
      } finally {
        await reader.close();
      }
    } finally {
      await browser?.close();
      killPids(unfinishedRunnerPids(workers));
      await killAll(children);
    }
  });
});
