import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CATALOG_ENV } from "../../src/agents/catalog.js";
import { writeTestAgentCatalog } from "../support/user-catalog.js";
import { authorityFolder, killAll, spawnPrp, startApiDaemon, type Child, type Daemon } from "./authority-processes.js";
import { runPrp } from "./run-cli.js";

describe("a named agent from submit to a worker that advertises it", () => {
  let folder: { dir: string; key: string; store: string[] };
  const children: Array<Daemon | Child> = [];
  let env: Record<string, string>;
  let apiUrl: string;
  const tokenFile = () => join(folder.dir, "operate-token");
  before(async () => {
    folder = authorityFolder("prp-named-agent-");
    // One user catalog for the authority (it accepts the name), the worker and submit (their hints).
    env = { [CATALOG_ENV]: writeTestAgentCatalog(folder.dir, "streamed-answer") };
    const made = runPrp(["authority", "token", "create", "--scope", "operate", "--out", tokenFile(), ...folder.store]);
    assert.equal(made.status, 0, made.stderr);
    const started = await startApiDaemon([...folder.store, "--listen", "127.0.0.1:0", "--poll-ms", "50"], env);
    children.push(started.daemon);
    apiUrl = started.apiUrl;
  });

  /** `prp submit --agent NAME --wait` and a `prp worker --once` of its own (named `worker`) advertising `agents`. */
  async function submitToWorker(name: string, agents: string, worker: string) {
    const credential = join(folder.dir, `${worker}.credential`);
    const agentsDir = join(folder.dir, `${worker}-agents`);
    mkdirSync(agentsDir);
    const added = runPrp(["authority", "worker", "add", worker, "--out", credential, ...folder.store]);
    assert.equal(added.status, 0, added.stderr);
    const submit = spawnPrp(
      ["submit", "--api", apiUrl, "--token-file", tokenFile(), "--agent", name, "--prompt", "go", "--wait"],
      env,
    );
    children.push(submit);
    const workerChild = spawnPrp(
      [
        "worker",
        "--api",
        apiUrl,
        "--token-file",
        credential,
        "--agents",
        agents,
        "--agents-dir",
        agentsDir,
        "--max-runs",
        "1",
        "--once",
        "--dir",
        join(folder.dir, worker),
      ],
      env,
    );
    children.push(workerChild);
    const submitted = await submit.exited(90_000).catch((err: Error) => {
      throw new Error(`${err.message}\nthe worker's stderr: ${workerChild.stderr()}`);
    });
    return { submit, worker: workerChild, submitted, agentsDir };
  }
  after(async () => {
    await killAll(children);
    rmSync(folder.dir, { recursive: true, force: true });
  });

  it("prp submit --agent sdk-test --wait: the worker advertising sdk-test claims it and its runner starts the catalog's command; the run succeeds", async () => {
    const { submit, worker, submitted } = await submitToWorker("sdk-test", "auto", "first");
    assert.equal(submitted, 0, `${submit.stdout()}\n${submit.stderr()}\n${worker.stderr()}`);
    assert.match(submit.stdout(), /: succeeded\n$/);
    assert.equal(await worker.exited(30_000), 0, worker.stderr());
    assert.match(worker.stderr(), /agent sdk-test: ready/);
    assert.match(worker.stderr(), /agent claude: not installed/, "auto probes only what is installed");
    assert.match(worker.stderr(), /advertising agents sdk-test\n/);

    const listed = runPrp(["authority", "worker", "list", ...folder.store]);
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /first .* agents sdk-test\n/);
    const runs = runPrp(["authority", "worker", "list", "--json", ...folder.store]);
    assert.deepEqual((JSON.parse(runs.stdout.trim()) as { agents: string[] }).agents, ["sdk-test"]);
  });

  it("a worker told it runs claude, without claude installed: the run ends at once and prp submit --wait says why", async () => {
    const { submit, worker, submitted, agentsDir } = await submitToWorker("claude", "claude", "second");
    assert.equal(submitted, 1, `${submit.stdout()}\n${submit.stderr()}\n${worker.stderr()}`);
    assert.match(submit.stdout(), /: failed\n/);
    assert.ok(
      submit
        .stdout()
        .includes(
          `  cannot start the agent: agent_not_installed — claude (@zed-industries/claude-code-acp@0.16.2) is not installed in ${agentsDir}: run \`prp agents install claude\`\n`,
        ),
      submit.stdout(),
    );
    assert.equal(await worker.exited(30_000), 0, worker.stderr());
    // The API says the same: the terminal GET /v1/runs/{id} returns (the console's failure card reads it).
    const runId = submit.stdout().split("\n")[0]!;
    const token = readFileSync(tokenFile(), "utf8").trim();
    const answer = await fetch(`${apiUrl}/v1/runs/${runId}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(answer.status, 200);
    const { terminal } = (await answer.json()) as { terminal: { stopReason: Record<string, unknown> } };
    assert.deepEqual([terminal.stopReason.kind, terminal.stopReason.code], ["agent_start", "agent_not_installed"]);
    assert.ok(submit.stdout().includes(String(terminal.stopReason.message)), "the words prp submit printed");
  });
});
