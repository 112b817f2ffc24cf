import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { argvOf, liveProcesses } from "../../src/harness/live-processes.js";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { until } from "../support/until.js";
import { killAll, spawnPrp, type Child } from "./authority-processes.js";
import { judgeRun, PERMISSION_INPUT_ANSWERS, type PrpEventLine } from "./authority-run.js";

interface RunView {
  run: {
    runId: string;
    state: string;
    terminalState: string | null;
    dispatch?: { state: string; endReason?: string | null } | null;
  };
  identity: { turnId: string };
}

/*
 * `prp demo --console` as a person uses it: a local control plane whose console starts, answers
 * and cancels runs that its own worker runs. Everything goes through the console's /v1 API with
 * the token the demo printed, as the page sends it.
 */
describe("prp demo --console: a whole local control plane", () => {
  const dir = mkdtempSync(join(tmpdir(), "prp-demo-stack-"));
  // The demo's folder inside HOME, which the sandbox shows an agent: its secrets must be hidden there, not merely elsewhere.
  const home = join(dir, "home");
  const out = join(home, "out");
  const children: Child[] = [];
  let demo: Child;
  let base: string;
  let token: string;
  let demoRunId: string;

  const api = async <T>(path: string, body?: unknown): Promise<{ status: number; value: T }> => {
    const res = await fetch(`${base}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, value: (await res.json()) as T };
  };
  const run = async (runId: string) => (await api<RunView>(`/v1/runs/${runId}`)).value;
  const events = async (runId: string): Promise<PrpEventLine[]> =>
    (await api<{ events: Array<{ event: PrpEventLine }> }>(`/v1/runs/${runId}/events?limit=1000`)).value.events.map(
      (e) => e.event,
    );
  /** Polls `check` (an API read) at a pace a server shares with the others, up to 60 s. */
  const eventually = (check: () => Promise<boolean>, what: () => string) =>
    until(async () => (await check()) || (await new Promise((r) => setTimeout(r, 100)), false), what, 60_000);
  const create = async (spec: Record<string, unknown>) => {
    const created = await api<RunView>("/v1/runs", spec);
    assert.equal(created.status, 201, JSON.stringify(created.value));
    return created.value.run.runId;
  };
  const started = () =>
    readFileSync(join(out, "worker", "started.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as { kind: string; runId: string; pid?: number });

  before(async () => {
    mkdirSync(home);
    demo = spawnPrp(["demo", "--console", "--delay-ms", "0", "--out", out], { HOME: home });
    children.push(demo);
    const url = () => /console: (http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64})#\/run\/(run_\w+)/.exec(demo.stdout());
    await until(
      () => url() !== null,
      () => `the demo to print its console's URL; stdout: ${demo.stdout()} stderr: ${demo.stderr()}`,
      60_000,
    );
    const parsed = new URL(url()![1]!);
    base = parsed.origin;
    token = parsed.searchParams.get("token")!;
    demoRunId = url()![2]!;
  });
  after(async () => {
    await killAll(children);
    rmSync(dir, { recursive: true, force: true });
  });

  it("the demo's run, queued through the API, is run by the local worker and succeeds", async () => {
    await until(
      () => demo.stdout().includes("open until Ctrl-C"),
      () => `the demo's run to end: ${demo.stdout()} ${demo.stderr()}`,
      60_000,
    );
    const view = await run(demoRunId);
    assert.equal(view.run.terminalState, "succeeded", JSON.stringify(view.run));
    assert.deepEqual(judgeRun(await events(demoRunId)), { runTerminalState: "succeeded", problems: [] });
    assert.ok(
      started().some((s) => s.kind === "started" && s.runId === demoRunId),
      "the local worker started its runner",
    );
    assert.match(demo.stdout(), /run\.terminal\s+Run succeeded/, "its events were printed as they came");
  });

  it("a run started from the console is claimed by the local worker, answered through the API, and succeeds", async () => {
    const runId = await create({ agent: { kind: "fake", script: "permission-input" }, prompt: "Ask me first." });
    const { identity } = await run(runId);
    for (const [requestId, resolution] of PERMISSION_INPUT_ANSWERS) {
      await eventually(
        async () =>
          (await events(runId)).some(
            (e) =>
              e.eventType === "runtime_request.created" &&
              (e.payload.request as { requestId?: string } | undefined)?.requestId === requestId,
          ),
        () => `${requestId} to be asked; demo stderr: ${demo.stderr()}`,
      );
      const view = await run(runId);
      assert.equal(view.run.state, "running", JSON.stringify(view.run));
      const sent = await api<{ commandId: string }>(`/v1/runs/${runId}/commands`, {
        type: "request.resolve",
        payload: { requestId, turnId: identity.turnId, resolution },
      });
      assert.equal(sent.status, 201, JSON.stringify(sent.value));
    }
    await eventually(
      async () => (await run(runId)).run.terminalState !== null,
      () => `the answered run to end; demo stderr: ${demo.stderr()}`,
    );
    const all = await events(runId);
    assert.deepEqual(judgeRun(all), { runTerminalState: "succeeded", problems: [] });
    assert.equal(all.filter((e) => e.eventType === "runtime_request.resolved").length, 2, "both answers arrived");
    assert.ok(
      started().some((s) => s.kind === "started" && s.runId === runId),
      "the local worker ran it",
    );
  });

  it("a queued run no worker can take is cancelled from the console", async () => {
    const runId = await create({
      agent: { kind: "fake", script: "happy-path" },
      labels: { pool: "elsewhere" },
    });
    assert.equal((await run(runId)).run.state, "queued");
    const cancelled = await api<RunView>(`/v1/runs/${runId}/cancel`, {});
    assert.ok(cancelled.status < 300, JSON.stringify(cancelled.value));
    const view = await run(runId);
    assert.deepEqual([view.run.state, view.run.dispatch?.endReason], ["ended", "cancelled"], JSON.stringify(view.run));
    assert.ok(!started().some((s) => s.runId === runId), "no runner was started for it");
  });

  it("a hostile agent run by the local worker cannot read the store, the server key or the console's URL", async () => {
    const probe = join(home, "hostile.sh");
    writeFileSync(join(home, "visible.txt"), "in the agent's view\n");
    const secrets = join(out, "demo", "console");
    writeFileSync(
      probe,
      `for f in ${home}/visible.txt ${secrets}/authority-server-key ${secrets}/console-url ${secrets}/authority/control-plane-state.sqlite; do
  if cat "$f" >/dev/null 2>&1; then echo "read $f"; else echo "hidden $f"; fi
done > "$PWD/report" 2>&1
ls ${secrets} >> "$PWD/report" 2>&1 || echo "no folder" >> "$PWD/report"
exec ${testAgentCommand("streamed-answer")}
`,
    );
    const runId = await create({ agent: { kind: "command", command: `sh ${probe}` }, prompt: "Fix the failing test." });
    await eventually(
      async () => (await run(runId)).run.terminalState !== null,
      () => `the hostile agent's run to end; demo stderr: ${demo.stderr()}`,
    );
    const report = readFileSync(join(out, "worker", "workspaces", runId, "report"), "utf8");
    assert.match(report, /^read .*visible\.txt$/m, `HOME is in its view: ${report}`);
    assert.doesNotMatch(report, /^read .*(key|url|sqlite)$/m, report);
    assert.match(report, /^hidden .*authority-server-key$/m, report);
    // The stack's secrets are really there: hidden, not missing.
    for (const f of ["authority-server-key", "console-url"]) assert.ok(existsSync(join(secrets, f)), f);
  });

  it("Ctrl-C stops the stack: exit 0, no runner or harness left, no URL file", async () => {
    const runnerPids = started()
      .filter((s) => s.kind === "started")
      .map((s) => s.pid!);
    assert.ok(runnerPids.length >= 3, JSON.stringify(started()));
    demo.kill("SIGINT");
    assert.equal(await demo.exited(), 0, demo.stderr());
    assert.ok(!existsSync(join(out, "demo", "console", "console-url")), "the URL file is removed");
    await until(
      () => liveProcesses().every((p) => !runnerPids.includes(p.pid) && !argvOf(p.pid).some((a) => a.includes(out))),
      () =>
        `no process of the stack's runs alive: ${liveProcesses()
          .filter((p) => argvOf(p.pid).some((a) => a.includes(out)))
          .map((p) => `${p.pid} ${argvOf(p.pid).join(" ")}`)
          .join("; ")}`,
      30_000,
    );
  });
});
