import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CATALOG_ENV } from "../../src/agents/catalog.js";
import { writeTestAgentCatalog } from "../support/user-catalog.js";
import { authorityFolder, killAll, spawnPrp, startApiDaemon, type Child, type Daemon } from "./authority-processes.js";
import { runPrp } from "./run-cli.js";

describe("a named agent from submit to a worker that advertises it", () => {
  let folder: { dir: string; key: string; store: string[] };
  const children: Array<Daemon | Child> = [];
  before(() => {
    folder = authorityFolder("prp-named-agent-");
  });
  after(async () => {
    await killAll(children);
    rmSync(folder.dir, { recursive: true, force: true });
  });

  it("prp submit --agent sdk-test --wait: the worker advertising sdk-test claims it and its runner starts the catalog's command; the run succeeds", async () => {
    // One user catalog for the authority (it accepts the name), the worker and submit (their hints).
    const env = { [CATALOG_ENV]: writeTestAgentCatalog(folder.dir, "streamed-answer") };
    const tokenFile = join(folder.dir, "operate-token");
    const credential = join(folder.dir, "worker-credential");
    const agentsDir = join(folder.dir, "agents");
    mkdirSync(agentsDir);
    for (const args of [
      ["token", "create", "--scope", "operate", "--out", tokenFile],
      ["worker", "add", "agents-01", "--out", credential],
    ]) {
      const made = runPrp(["authority", ...args, ...folder.store]);
      assert.equal(made.status, 0, made.stderr);
    }
    const { daemon, apiUrl } = await startApiDaemon(
      [...folder.store, "--listen", "127.0.0.1:0", "--poll-ms", "50"],
      env,
    );
    children.push(daemon);

    const submit = spawnPrp(
      ["submit", "--api", apiUrl, "--token-file", tokenFile, "--agent", "sdk-test", "--prompt", "go", "--wait"],
      env,
    );
    children.push(submit);
    const worker = spawnPrp(
      [
        "worker",
        "--api",
        apiUrl,
        "--token-file",
        credential,
        "--agents",
        "auto",
        "--agents-dir",
        agentsDir,
        "--max-runs",
        "1",
        "--once",
        "--dir",
        join(folder.dir, "worker"),
      ],
      env,
    );
    children.push(worker);
    const submitted = await submit.exited(90_000).catch((err: Error) => {
      throw new Error(`${err.message}\nthe worker's stderr: ${worker.stderr()}`);
    });
    assert.equal(submitted, 0, `${submit.stdout()}\n${submit.stderr()}\n${worker.stderr()}`);
    assert.match(submit.stdout(), /: succeeded\n$/);
    assert.equal(await worker.exited(30_000), 0, worker.stderr());
    assert.match(worker.stderr(), /agent sdk-test: ready/);
    assert.match(worker.stderr(), /agent claude: not installed/, "auto probes only what is installed");
    assert.match(worker.stderr(), /advertising agents sdk-test\n/);

    const listed = runPrp(["authority", "worker", "list", ...folder.store]);
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /agents-01 .* agents sdk-test\n/);
    const runs = runPrp(["authority", "worker", "list", "--json", ...folder.store]);
    assert.deepEqual((JSON.parse(runs.stdout.trim()) as { agents: string[] }).agents, ["sdk-test"]);
  });
});
