import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  authorityFolder,
  killAll,
  spawnRunnerd,
  startApiDaemon,
  type Child,
  type Daemon,
} from "../cli/authority-processes.js";
import { adminJson } from "../cli/run-cli.js";
import { follow } from "./sse-client.js";
import { judgeStream } from "./support.js";

describe("prp authority serve --api: a run created, started and followed over HTTP", () => {
  let dir: string;
  let storeArgs: string[];
  const children: Array<Daemon | Child> = [];
  before(() => {
    ({ dir, store: storeArgs } = authorityFolder("prp-api-e2e-"));
  });
  after(async () => {
    await killAll(children);
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates a run, gets its ticket, starts prp-runnerd with it and follows SSE to run.terminal", async () => {
    const made = adminJson(storeArgs, ["authority", "token", "create", "--scope", "admin", "--label", "e2e", "--json"]);
    const admin = { token: made.token as string };
    assert.match(admin.token, /^prp_tok_/);

    const { daemon, apiUrl } = await startApiDaemon([...storeArgs, "--listen", "127.0.0.1:0", "--poll-ms", "50"]);
    children.push(daemon);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${apiUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${admin.token}`,
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(10_000),
      });
      return { status: res.status, json: (await res.json()) as any };
    };

    const created = await call("POST", "/v1/runs", {
      agent: { kind: "fake", script: "happy-path" },
      prompt: "Play the happy-path script.",
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const runId = created.json.run.runId as string;
    const stream = follow(apiUrl, `/v1/runs/${runId}/events`, admin.token);
    assert.equal(await stream.status, 200);

    const ticket = await call("POST", `/v1/runs/${runId}/tickets`, { stateDir: join(dir, `runner-${runId}`) });
    assert.equal(ticket.status, 201, JSON.stringify(ticket.json));
    assert.ok(ticket.json.connectUrl.startsWith(daemon.url));
    const runner = spawnRunnerd([...ticket.json.runnerArgs, "--delay-ms", "0"], ticket.json.ticket, dir);
    children.push(runner);
    assert.equal(await runner.exited(), 0, runner.stderr());

    await Promise.race([
      stream.closed,
      new Promise((_, reject) => setTimeout(() => reject(new Error("the stream did not end")), 30_000)),
    ]);
    assert.ok(stream.ended(), "the stream ends with event: end after run.terminal");
    const page = await call("GET", `/v1/runs/${runId}/events`);
    const log = page.json.events.map((e: any) => ({ sourceSeq: e.seq, envelope: JSON.stringify(e.event) }));
    // The page's envelopes are canonical JSON, so JSON.stringify gives back their committed bytes.
    assert.equal(judgeStream(stream.events(), log), null);
    assert.equal(log.at(-1).sourceSeq, stream.events().at(-1)!.seq);
    assert.equal(JSON.parse(stream.events().at(-1)!.data).eventType, "run.terminal");
    const run = await call("GET", `/v1/runs/${runId}`);
    assert.equal(run.json.run.state, "ended");
    assert.equal(run.json.terminal.runTerminalState, "succeeded");

    daemon.kill("SIGTERM");
    assert.equal(await daemon.exited(), 0, daemon.stderr());
  });
});
