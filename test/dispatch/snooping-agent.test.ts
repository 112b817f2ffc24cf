import assert from "node:assert/strict";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { PrpClient } from "../../src/client/index.js";
import { until } from "../support/until.js";
import { killAll, type Child } from "../cli/authority-processes.js";
import { runPrp } from "../cli/run-cli.js";
import {
  addToken,
  addWorker,
  killPids,
  startAuthority,
  startWorker,
  unfinishedRunnerPids,
  type StoreFlags,
  type WorkerProcess,
} from "./support.js";

const root = mkdtempSync(join(tmpdir(), "prp-dispatch-snoop-"));
after(() => rmSync(root, { recursive: true, force: true }));

/**
 * An "agent" that tries to read what a worker keeps beside it, writes what it could read to
 * snoop.json in its workspace, and exits: it never speaks ACP, so its run fails, which is all
 * the same to what it was after.
 */
const SNOOP = `
const fs = require("node:fs");
const out = {};
for (const p of process.argv.slice(1)) {
  try { out[p] = fs.statSync(p).isDirectory() ? fs.readdirSync(p) : fs.readFileSync(p, "utf8"); }
  catch (e) { out[p] = e.code; }
}
fs.writeFileSync("snoop.json", JSON.stringify(out));
`;

describe("a hostile agent run by a worker", () => {
  it("cannot read the worker's credential, its record, or any run's state, even in the agent's home", async () => {
    // The worker's folder and credential in the agent's home, which the sandbox shows it.
    const home = join(root, "home");
    mkdirSync(home, { recursive: true });
    chmodSync(root, 0o755);
    const keyFile = join(root, "secrets", "key");
    assert.equal(runPrp(["authority", "key", "--out", keyFile]).status, 0);
    const location = `sqlite:${join(root, "store")}`;
    const store: StoreFlags = { flags: ["--store", location, "--server-key-file", keyFile], location, keyFile };
    const children: Child[] = [];
    const workers: WorkerProcess[] = [];
    try {
      const { daemon, apiUrl } = await startAuthority(store);
      children.push(daemon);
      const credential = addWorker(store, "w1", home);
      const dir = join(home, "worker");
      const visible = join(home, "visible.txt");
      writeFileSync(visible, "the agent's home is visible");
      const worker = startWorker({ apiUrl, credential, dir, name: "w1", labels: "os=linux", maxRuns: 1 }, [], {
        HOME: home,
      });
      workers.push(worker);
      children.push(worker);
      const snoopFile = join(home, "snoop.cjs");
      writeFileSync(snoopFile, SNOOP);
      const targets = [credential, join(dir, "state"), join(dir, "started.jsonl"), visible];
      const client = new PrpClient({
        baseUrl: apiUrl,
        token: readFileSync(addToken(store, "operate", root), "utf8").trim(),
      });
      const run = await client.createRun({
        agent: { kind: "command", command: `${process.execPath} ${snoopFile} ${targets.join(" ")}` },
        prompt: "Look around.",
        labels: { os: "linux" },
      });
      const snooped = join(dir, "workspaces", run.run.runId, "snoop.json");
      // The file exists from the agent's open, before its one write: wait for the whole report.
      let seen: Record<string, unknown> = {};
      await until(
        () => {
          if (!existsSync(snooped)) return false;
          try {
            seen = JSON.parse(readFileSync(snooped, "utf8")) as Record<string, unknown>;
            return true;
          } catch {
            return false;
          }
        },
        () => `the agent's report; worker: ${worker.stderr()}`,
      );
      assert.equal(seen[visible], "the agent's home is visible", "the agent reads its home: the probe can see");
      // Hidden: an error, or an empty file or folder in its place; never what is really there.
      const shown = (p: string) => JSON.stringify(seen[p] ?? null);
      assert.doesNotMatch(shown(credential), /prp_wkr_/, `the credential is hidden: ${shown(credential)}`);
      assert.doesNotMatch(shown(join(dir, "state")), /run_/, `the runs' state is hidden: ${shown(join(dir, "state"))}`);
      assert.doesNotMatch(shown(join(dir, "started.jsonl")), /run_/, "the worker's record is hidden");
      // What the agent did not see is really there, outside its sandbox: the probe is not blind.
      assert.match(readFileSync(credential, "utf8"), /prp_wkr_/);
      assert.ok(readdirSync(join(dir, "state")).includes(run.run.runId));
      assert.match(readFileSync(join(dir, "started.jsonl"), "utf8"), new RegExp(run.run.runId));
    } finally {
      killPids(unfinishedRunnerPids(workers));
      await killAll(children);
    }
  });
});
