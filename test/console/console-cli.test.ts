import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { protocolDir } from "../../src/contract/package-root.js";
import type { EventPage, Run, RunList } from "../../src/contract/api/generated/types.js";
import type { SessionSnapshot } from "../../src/reducer/snapshot.js";
import { responseChecker } from "../support/openapi-responses.js";
import { replayFixture } from "../../src/reducer/index.js";
import { isLoopback } from "../../src/transport/loopback.js";
import { startDaemon } from "../cli/authority-processes.js";
import { runPrp } from "../cli/run-cli.js";
import { until } from "../support/until.js";
import { startConsole, type ConsoleProcess } from "./console-process.js";
import { PATIENT_HARNESS } from "../support/scripts.js";

const openApi = responseChecker();

/** A GET or POST with the console's token, as the page sends it; a /v1 answer is checked against the OpenAPI document. */
async function api<T>(c: ConsoleProcess, path: string, body?: unknown): Promise<{ status: number; value: T }> {
  const method = body === undefined ? "GET" : "POST";
  const res = await fetch(`${c.base}${path}`, {
    headers: {
      authorization: `Bearer ${c.token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { method, body: JSON.stringify(body) }),
  });
  const value = (await res.json()) as T;
  if (path.startsWith("/v1/")) openApi.checkResponse(method, path, res.status, value);
  return { status: res.status, value };
}

type Session = Omit<SessionSnapshot, "items"> & {
  items: Array<SessionSnapshot["items"][number] & { textLength: number }>;
};

describe("prp console without a browser: replay files, the daemon's --console, the demo's --console", () => {
  let dir: string;
  const started: ConsoleProcess[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-console-cli-"));
  });
  after(async () => {
    for (const c of started) {
      c.kill("SIGKILL");
      await c.exited();
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const start = async (args: string[]) => {
    const c = await startConsole(args);
    started.push(c);
    return c;
  };

  it("a loopback address is told apart from one others can reach", () => {
    for (const host of ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
      assert.equal(isLoopback(host, { localhost: true }), true, host);
    for (const host of ["0.0.0.0", "192.168.1.4", "::", "example.org"])
      assert.equal(isLoopback(host, { localhost: true }), false, host);
  });

  it("prp console FILE steps through a replay fixture: the session at each step is the reduction of the events up to it; commands are refused", async () => {
    const path = join(protocolDir(), "fixtures", "replay", "duplicate-event.json");
    const expected = replayFixture(readFileSync(path));
    assert.ok(expected.ok);
    const c = await start(["console", path]);
    const runs = await api<RunList>(c, "/v1/runs");
    assert.equal(runs.value.runs.length, 1);
    const runId = runs.value.runs[0]!.runId;
    const page = await fetch(`${c.base}/`);
    assert.match(await page.text(), /<meta name="prp-console-source" content="replay"/, "the page is told: a replay");
    const events = await api<EventPage>(c, `/v1/runs/${runId}/events`);
    assert.deepEqual(
      events.value.events.map((e) => e.event),
      expected.events,
      "the file's events, in delivery order, repeats included",
    );
    const last = await api<Run & { session: Session }>(c, `/v1/runs/${runId}`);
    // The view carries the snapshot without its per-event lists (the timeline has those), items' text cut to its end.
    const { timeline: _timeline, processedEventIds: _processed, items, ...rest } = expected.snapshot;
    const { items: shownItems, ...shown } = last.value.session;
    assert.deepEqual(shown, rest, "the last step is prp replay's snapshot");
    assert.deepEqual(
      shownItems.map(({ textLength: _n, ...item }) => item),
      items,
    );
    assert.ok(last.value.session.duplicateEventIds.length > 0, "this fixture has a duplicate, and the page is told");
    const step1 = await api<Run & { session: Session }>(c, `/v1/runs/${runId}?upto=1`);
    assert.equal(step1.value.position, 1);
    assert.equal(
      step1.value.session.sourceCursors[Object.keys(step1.value.session.sourceCursors)[0]!],
      expected.events[0]!.sourceSeq,
      "the reduction of the first event only",
    );
    const refused = await api<{ code: string }>(c, `/v1/runs/${runId}/commands`, {
      type: "run.cancel",
      payload: {},
    });
    assert.deepEqual([refused.status, refused.value.code], [409, "replay_read_only"]);
  });

  it("prp console FILE.ndjson reads a transcript; a file the codec refuses is an error (exit 1) with its line", async () => {
    const fixture = replayFixture(readFileSync(join(protocolDir(), "fixtures", "replay", "happy-path.json")));
    assert.ok(fixture.ok);
    const good = join(dir, "run.ndjson");
    writeFileSync(good, fixture.events.map((e) => JSON.stringify(e)).join("\n"));
    const c = await start(["console", good]);
    const runs = await api<RunList>(c, "/v1/runs");
    assert.equal(runs.value.runs[0]!.eventCount, fixture.events.length);
    const bad = join(dir, "bad.ndjson");
    writeFileSync(bad, `${JSON.stringify(fixture.events[0])}\n{"schema":"nope"}\n`);
    const refused = runPrp(["console", bad]);
    assert.equal(refused.status, 1, refused.stderr);
    assert.match(refused.stderr, /line 2:/);
  });

  it("prp authority serve --console serves the console beside the daemon, keeps its token out of the logs (in a 0600 file) and stops with it", async () => {
    const key = join(dir, "key");
    assert.equal(runPrp(["authority", "key", "--out", key]).status, 0);
    const storeDir = join(dir, "store");
    const store = ["--store", `sqlite:${storeDir}`, "--server-key-file", key];
    const daemon = await startDaemon([...store, "--console"]);
    const urlFile = join(storeDir, "console-url");
    try {
      await until(
        () => daemon.stdout().includes("console: "),
        () => `the daemon to print its console's address: ${daemon.stdout()}`,
        30_000,
      );
      const line =
        /^console: (http:\/\/127\.0\.0\.1:\d+\/) \(its URL with the access token is in (.+), readable by you only\)$/m.exec(
          daemon.stdout(),
        );
      assert.ok(line, `the daemon printed its console's address and where its URL is: ${daemon.stdout()}`);
      assert.equal(line[2], urlFile);
      assert.equal(statSync(urlFile).mode & 0o777, 0o600);
      const url = readFileSync(urlFile, "utf8").trim();
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}$/);
      const token = new URL(url).searchParams.get("token")!;
      const created = JSON.parse(runPrp(["authority", "run", "create", "--json", ...store]).stdout) as {
        runId: string;
      };
      const res = await fetch(`${new URL(url).origin}/v1/runs`, { headers: { authorization: `Bearer ${token}` } });
      assert.deepEqual(
        ((await res.json()) as RunList).runs.map((r) => r.runId),
        [created.runId],
      );
      assert.equal((await fetch(`${new URL(url).origin}/v1/runs`)).status, 401);
      daemon.kill("SIGTERM");
      assert.equal(await daemon.exited(), 0, daemon.stderr());
      assert.ok(
        !daemon.stdout().includes(token) && !daemon.stderr().includes(token),
        "the token is in neither stdout nor stderr",
      );
      assert.equal(existsSync(urlFile), false, "the URL file is removed when the daemon stops");
    } finally {
      daemon.kill("SIGKILL");
      await daemon.exited();
    }
  });

  it("prp demo ends by itself and names --console; prp demo --console serves the run and its bundle until Ctrl-C", async () => {
    const plain = runPrp(["demo", "--delay-ms", "0", "--out", join(dir, "plain"), ...PATIENT_HARNESS]);
    // It ends by itself (spawnSync returned), whatever the run's end: on a loaded machine a fake harness can miss its 2 s to say ready.
    assert.ok(plain.status === 0 || /harness did not say ready/.test(plain.stdout), `${plain.stdout}\n${plain.stderr}`);
    assert.match(plain.stdout, /prp demo --console/);

    const c = await start(["demo", "--console", "--delay-ms", "0", "--out", join(dir, "watched"), ...PATIENT_HARNESS]);
    const runId = /#\/run\/(run_\w+)/.exec(c.stdout())?.[1];
    assert.ok(runId, c.stdout());
    await until(
      () => c.stdout().includes("open until Ctrl-C"),
      () => `the demo to end its run: ${c.stdout()}`,
      60_000,
    );
    const view = await api<Run & { session: Session }>(c, `/v1/runs/${runId}`);
    // Whatever the run's end (a loaded machine can fail a fake harness's start), the page shows it as the store has it.
    assert.equal(
      view.value.run.terminalState,
      view.value.session.terminal?.runTerminalState,
      JSON.stringify(view.value.run),
    );
    const artifacts = await api<{ files: Array<{ name: string }> }>(c, `/bundles/${runId}`);
    assert.ok(
      artifacts.value.files.some((a) => a.name === "native-execution.json"),
      JSON.stringify(artifacts.value.files),
    );
    const file = await fetch(`${c.base}/bundles/${runId}/transcript.ndjson`, {
      headers: { authorization: `Bearer ${c.token}` },
    });
    assert.equal(file.status, 200);
    assert.equal((await file.text()).split("\n").filter((l) => l !== "").length, view.value.run.eventCount);
    const outside = await api<{ code: string }>(c, `/bundles/${runId}/..%2F..%2Fauthority-server-key`);
    assert.deepEqual([outside.status, outside.value.code], [404, "not_found"], "only the bundle's own files");
    c.kill("SIGINT");
    assert.equal(await c.exited(), 0, c.stderr());
  });
});
