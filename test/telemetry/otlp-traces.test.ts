import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { defaultCommandId } from "../../src/authority/commands.js";
import { PrpClient } from "../../src/client/index.js";
import { killAll, spawnPrp, type Child } from "../cli/authority-processes.js";
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
} from "../dispatch/support.js";
import { startOtlpReceiver, type OtlpReceiver } from "../support/otlp-receiver.js";
import { runTreeProblems } from "../support/span-tree.js";
import { until } from "../support/until.js";

const root = mkdtempSync(join(tmpdir(), "prp-traces-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** The happy-path script's items, from the script itself: each is one tool call. */
const HAPPY_PATH_ITEMS = ["item_command_1", "item_file_1"];
const OPENING_COMMANDS = [1, 2, 3].map(defaultCommandId);

/** An authority with --api and one worker, both with `env`; `work` gets the API's URL and an operate token. */
async function withStack(
  name: string,
  env: NodeJS.ProcessEnv,
  work: (api: { url: string; token: string; client: PrpClient }) => Promise<void>,
): Promise<{ daemonStderr: string }> {
  const dir = join(root, name);
  const keyFile = join(dir, "secrets", "key");
  assert.equal(runPrp(["authority", "key", "--out", keyFile]).status, 0);
  const location = `sqlite:${join(dir, "store")}`;
  const store: StoreFlags = { flags: ["--store", location, "--server-key-file", keyFile], location, keyFile };
  const children: Child[] = [];
  const workers: WorkerProcess[] = [];
  let daemonStderr: string;
  try {
    const { daemon, apiUrl } = await startAuthority(store, [], env);
    children.push(daemon);
    const credential = addWorker(store, "w1", dir);
    const worker = startWorker(
      { apiUrl, credential, dir: join(dir, "worker"), name: "w1", labels: "os=linux", maxRuns: 2 },
      [],
      env,
    );
    workers.push(worker);
    children.push(worker);
    const token = readFileSync(addToken(store, "operate", dir), "utf8").trim();
    await work({ url: apiUrl, token, client: new PrpClient({ baseUrl: apiUrl, token }) });
    // Every runner has exited (each flushes its spans first); a SIGTERM lets the authority flush its own.
    await until(
      () => unfinishedRunnerPids(workers).length === 0,
      () => `the runners to exit; worker: ${worker.stderr()}`,
    );
    daemon.kill("SIGTERM");
    await daemon.exited();
    daemonStderr = daemon.stderr();
  } finally {
    killPids(unfinishedRunnerPids(workers));
    await killAll(children);
  }
  return { daemonStderr };
}

/** POST /v1/runs with `headers`; the created run's id. */
async function createRun(api: { url: string; token: string }, headers: Record<string, string>): Promise<string> {
  const res = await fetch(`${api.url}/v1/runs`, {
    method: "POST",
    headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ agent: { kind: "fake", script: "happy-path" }, prompt: "go", labels: { os: "linux" } }),
  });
  const text = await res.text();
  assert.equal(res.status, 201, text);
  return (JSON.parse(text) as { run: { runId: string } }).run.runId;
}

const ended = async (client: PrpClient, runId: string) => (await client.getRun(runId)).run.terminalState !== null;

describe("traces over OTLP/HTTP from a real authority, worker and runner", () => {
  it("carries the request's trace context from POST /v1/runs to the runner's spans", async () => {
    const receiver: OtlpReceiver = await startOtlpReceiver();
    const traceId = randomBytes(16).toString("hex");
    const parentSpanId = randomBytes(8).toString("hex");
    console.log(`# trace id ${traceId}, parent span ${parentSpanId}`);
    const hostile = `00-${"z".repeat(32)}-${"q".repeat(16)}-01<script>`;
    let traced = "";
    let forged = "";
    try {
      const { daemonStderr } = await withStack(
        "traced",
        { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: "50" },
        async (api) => {
          traced = await createRun(api, { traceparent: `00-${traceId}-${parentSpanId}-01` });
          forged = await createRun(api, { traceparent: hostile, tracestate: "k=".padEnd(5_000, "v") });
          for (const runId of [traced, forged])
            await until(
              async () => ended(api.client, runId),
              () => `run ${runId} to end`,
            );
          // A command for the ended run is refused: its request span says so, in the caller's trace.
          const refused = await fetch(`${api.url}/v1/runs/${traced}/commands`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${api.token}`,
              "content-type": "application/json",
              traceparent: `00-${traceId}-${parentSpanId}-01`,
            },
            body: JSON.stringify({ type: "run.cancel", payload: {} }),
          });
          assert.equal(refused.status >= 400, true, await refused.text());
          await until(
            () => receiver.spans().filter((s) => s.name === "prp.run").length === 2,
            () =>
              `both runs' prp.run spans; received: ${receiver
                .spans()
                .map((s) => s.name)
                .join(", ")}`,
          );
        },
      );
      assert.deepEqual(receiver.refused(), [], "the exporter sends OTLP/JSON to /v1/traces");
      const spans = receiver.spans();
      const request = spans.find((s) => s.name === "POST /v1/runs" && s.attributes["prp.run.id"] === traced);
      assert.ok(request, `the API request's span; got ${spans.map((s) => s.name).join(", ")}`);
      assert.equal(request.traceId, traceId, "the request span joins the caller's trace");
      assert.equal(request.parentSpanId, parentSpanId, "under the caller's span");
      const run = spans.find((s) => s.name === "prp.run" && s.attributes["prp.run.id"] === traced)!;
      assert.equal(run.traceId, traceId, "the runner's run span is in the caller's trace");
      assert.equal(run.parentSpanId, request.spanId, "a child of the API request that created it");
      assert.equal(run.attributes["prp.outcome"], "succeeded");
      assert.deepEqual(
        runTreeProblems(spans, { runId: traced, toolCalls: HAPPY_PATH_ITEMS, commands: OPENING_COMMANDS }),
        [],
      );
      const command = spans.find((s) => s.name === "POST /v1/runs/{runId}/commands")!;
      assert.equal(command.traceId, traceId);
      assert.equal(command.attributes["prp.run.id"], traced);
      assert.equal(command.attributes["prp.command.type"], "run.cancel");
      assert.equal(command.error, true, "a refused request's span is ERROR");
      // A forged header is ignored: the request succeeded, its run has a trace of its own, nothing echoed.
      const forgedRequest = spans.find((s) => s.name === "POST /v1/runs" && s.attributes["prp.run.id"] === forged)!;
      assert.equal(forgedRequest.parentSpanId, undefined);
      const forgedRun = spans.find((s) => s.name === "prp.run" && s.attributes["prp.run.id"] === forged)!;
      assert.equal(forgedRun.traceId, forgedRequest.traceId);
      assert.notEqual(forgedRun.traceId, traceId);
      assert.ok(
        !daemonStderr.includes("<script>") && !daemonStderr.includes("q".repeat(16)),
        "the header is not logged",
      );
    } finally {
      await receiver.close();
    }
  });

  it("sends nothing when OTEL_TRACES_EXPORTER=none, though an endpoint is set", async () => {
    const receiver = await startOtlpReceiver();
    try {
      const env = { OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint };
      await withStack("untraced", env, async (api) => {
        const runId = await createRun(api, {
          traceparent: `00-${randomBytes(16).toString("hex")}-${"1".repeat(16)}-01`,
        });
        await until(
          async () => ended(api.client, runId),
          () => `run ${runId} to end`,
        );
      });
      assert.deepEqual(receiver.spans(), []);
      assert.deepEqual(receiver.refused(), []);
    } finally {
      await receiver.close();
    }
  });

  it("traces a local prp run too: its prp.run span is the root of a trace of its own", async () => {
    const receiver = await startOtlpReceiver();
    const out = join(root, "local");
    const child = spawnPrp(["run", "--script", "happy-path", "--out", out, "--json"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: "50",
    });
    try {
      assert.equal(await child.exited(), 0, child.stderr());
      const run = receiver.spans().find((s) => s.name === "prp.run");
      assert.ok(
        run,
        `a prp.run span; got ${receiver
          .spans()
          .map((s) => s.name)
          .join(", ")}`,
      );
      assert.equal(run.parentSpanId, undefined);
      const runId = run.attributes["prp.run.id"] as string;
      assert.match(child.stdout(), new RegExp(`"runId":"${runId}"`), "the span names the run prp run ran");
      assert.deepEqual(runTreeProblems(receiver.spans(), { runId, toolCalls: HAPPY_PATH_ITEMS, commands: [] }), []);
    } finally {
      child.kill("SIGKILL");
      await receiver.close();
    }
  });
});
