import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PrpClient } from "../../src/client/index.js";
import { until } from "../support/until.js";
import {
  authorityFolder,
  killAll,
  spawnPrp,
  spawnRunnerd,
  startApiDaemon,
  type Child,
  type Daemon,
} from "./authority-processes.js";
import { runPrp } from "./run-cli.js";

describe("prp submit --wait against a real authority", () => {
  let folder: { dir: string; key: string; store: string[] };
  const children: Array<Daemon | Child> = [];
  before(() => {
    folder = authorityFolder("prp-submit-wait-");
  });
  after(async () => {
    await killAll(children);
    rmSync(folder.dir, { recursive: true, force: true });
  });

  it("queues the run, follows its events as prp events prints them until run.terminal, and exits 0 for a succeeded run", async () => {
    const tokenFile = join(folder.dir, "admin-token");
    const made = runPrp(["authority", "token", "create", ...folder.store, "--scope", "admin", "--out", tokenFile]);
    assert.equal(made.status, 0, made.stderr);
    const { daemon, apiUrl } = await startApiDaemon([...folder.store, "--listen", "127.0.0.1:0", "--poll-ms", "50"]);
    children.push(daemon);
    const api = ["--api", apiUrl, "--token-file", tokenFile];
    const submit = spawnPrp(["submit", ...api, "--script", "happy-path", "--prompt", "go", "--wait"]);
    children.push(submit);
    await until(
      () => submit.stdout().includes("\n"),
      () => `the run id; stderr: ${submit.stderr()}`,
      30_000,
    );
    const runId = submit.stdout().split("\n")[0]!;
    assert.match(runId, /^run_/);

    // No worker here: the run is served by hand, with a ticket, as before the queue.
    const stateDir = mkdtempSync(join(tmpdir(), "prp-submit-wait-runner-"));
    const client = new PrpClient({ baseUrl: apiUrl, token: readFileSync(tokenFile, "utf8").trim() });
    const ticket = await client.createTicket(runId, { stateDir: join(stateDir, "state") });
    const runner = spawnRunnerd([...ticket.runnerArgs, "--delay-ms", "0"], ticket.ticket, folder.dir);
    children.push(runner);
    assert.equal(await runner.exited(), 0, runner.stderr());
    assert.equal(await submit.exited(60_000), 0, submit.stderr());
    const events = runPrp(["events", "--run", runId, ...folder.store]);
    assert.ok(submit.stdout().includes(events.stdout), `${submit.stdout()}\n---\n${events.stdout}`);
    assert.match(submit.stdout(), new RegExp(`run ${runId}: succeeded\\n$`));
    rmSync(stateDir, { recursive: true, force: true });
  });
});
