import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { protocolDir } from "../../src/contract/package-root.js";
import { acceptedReplayFixtures, snapshotGolden, summaryGolden } from "../../scripts/replay-goldens.js";
import { runPrp } from "../cli/run-cli.js";
import { event, json } from "../contract/samples.js";

const root = protocolDir();
const fixture = (name: string) => join(root, "fixtures/replay", `${name}.json`);
const read = (path: string) => readFileSync(path, "utf8").replace(/\r\n/g, "\n");
/** A fixture's events as an NDJSON stream, the way a run's output would be piped in. */
const ndjson = (name: string) =>
  (JSON.parse(read(fixture(name))).events as unknown[]).map((e) => JSON.stringify(e)).join("\n") + "\n";

describe("prp replay", () => {
  for (const { name, path } of acceptedReplayFixtures(root)) {
    it(`--summary on ${name} prints its golden summary byte for byte`, () => {
      const run = runPrp(["replay", "--summary", path]);
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stdout, read(summaryGolden(root, name)));
    });
  }

  it("--json prints the golden snapshot", () => {
    const run = runPrp(["replay", "--json", fixture("unknown-optional-fields")]);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, read(snapshotGolden(root, "unknown-optional-fields")));
  });

  it("prints a timeline for a person, with the gap called out where it happened, then state, integrity and result", () => {
    const run = runPrp(["replay", fixture("source-gap")]);
    assert.equal(run.status, 0, run.stderr);
    const lines = run.stdout.split("\n");
    assert.equal(lines[0], 'Replay of fixture "source-gap", run run_replay_gap');
    assert.ok(lines.includes("Timeline: 5 applied events"));
    const header = lines.findIndex((l) => /^ {2}# +source:seq +event +summary$/.test(l));
    assert.ok(header > 0, run.stdout);
    assert.match(lines[header + 1]!, /^ {2}1 +runner:runner_replay:1 +session\.started +session started$/);
    assert.match(lines[header + 3]!, /! gap in runner:runner_replay: expected seq 3, received 4; missing 3$/);
    assert.match(lines[header + 4]!, /^ {2}3 +runner:runner_replay:4 +run\.result\.proposed +Bumped the lockfile\.$/);
    for (const expected of [
      /^ {2}session +running$/m,
      /^ {2}turn +completed$/m,
      /^Integrity: gap_detected$/m,
      /^ {2}gaps +runner:runner_replay expected 3, received 4, missing 3$/m,
      /^ {2}terminal +turn completed, run succeeded, work done$/m,
    ]) {
      assert.match(run.stdout, expected);
    }
    assert.ok(
      run.stdout.indexOf("Timeline") < run.stdout.indexOf("State") &&
        run.stdout.indexOf("Integrity") < run.stdout.indexOf("Result"),
    );
  });

  it("calls out duplicates, out-of-order events and pending requests", () => {
    const dup = runPrp(["replay", fixture("duplicate-event")]);
    assert.match(dup.stdout, /Completed assistant_message {2}\[delivered 2 times, applied once\]$/m);
    assert.match(dup.stdout, /^ {2}duplicates +event_duplicate_03 \(delivered 2 times, applied once\)$/m);
    const late = json(event(1, { sourceEventId: "event_late", sourceSeq: 1, eventType: "turn.failed", payload: {} }));
    const run = runPrp(["replay", "--events", "-"], {
      input: `${json(event(1))}\n${json(event(1, { sourceEventId: "event_02", sourceSeq: 2 }))}\n${late}\n`,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^Replay of an event stream, run run_test$/m);
    assert.match(
      run.stdout,
      /^ {2}out of order +event_late \(runner:runner_test:1, at or behind the cursor; not applied\)$/m,
    );
    assert.match(run.stdout, /^Integrity: gap_detected$/m);
    const pending = runPrp(["replay", fixture("interrupted-run")]);
    assert.match(
      pending.stdout,
      /^ {4}request_replay_interrupted_01 +permission +pending +"Allow the agent to delete the build\/ directory\?"$/m,
    );
  });

  it("--events reads an NDJSON stream from a file or stdin; it has no identity, so the summary's runId is null", () => {
    const golden = JSON.parse(read(summaryGolden(root, "session-goal-v2")));
    const run = runPrp(["replay", "--events", "-", "--summary"], { input: ndjson("session-goal-v2") });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { ...golden, runId: null });
    const dir = mkdtempSync(join(tmpdir(), "prp-replay-"));
    try {
      writeFileSync(join(dir, "events.ndjson"), ndjson("session-goal-v2"));
      assert.equal(runPrp(["replay", "--events", join(dir, "events.ndjson"), "--summary"]).stdout, run.stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const snapshot = JSON.parse(runPrp(["replay", "--events", "-", "--json"], { input: ndjson("source-gap") }).stdout);
    assert.deepEqual([snapshot.fixtureName, snapshot.identity, snapshot.capabilities], [null, null, null]);
    assert.deepEqual(snapshot.gaps, [{ sourceKey: "runner:runner_replay", expected: 3, received: 4, missing: [3] }]);
  });

  it("rejects bad input with the typed error, and a bad stream line with its number, exiting 1", () => {
    const rejected = runPrp(["replay", fixture("unsupported-required-version")]);
    assert.equal(rejected.status, 1);
    assert.equal(rejected.stdout, "");
    assert.match(
      rejected.stderr,
      /unsupported-required-version\.json: unsupported_required_version at \/protocolVersion: /,
    );
    const stream = runPrp(["replay", "--events", "-"], { input: `${json(event(1))}\n{"oops"\n` });
    assert.equal(stream.status, 1);
    assert.match(stream.stderr, /^stdin: line 2: invalid_json at \/: input is not JSON/);
    const schema = runPrp(["replay", "--events", "-"], { input: `\n${json(event(1, { sourceKind: "harness" }))}\n` });
    assert.match(schema.stderr, /^stdin: line 2: schema_validation at \/sourceKind: /);
    // Issue 9 item 3: an event canonical JSON cannot hold, repeated, once threw from the duplicate check.
    const lone = json(event(1, { payload: { text: "split \ud83d" } }));
    const surrogate = runPrp(["replay", "--events", "-"], { input: `${lone}\n${lone}\n` });
    assert.equal(surrogate.status, 1, surrogate.stderr);
    assert.match(
      surrogate.stderr,
      /^stdin: line 1: schema_validation at \/payload\/text: string contains a lone surrogate/,
    );
    const duplicateName = runPrp(["replay", "--events", "-"], {
      input: `${json(event(1)).replace(/}$/, ',"sourceSeq":9}')}\n`,
    });
    assert.match(duplicateName.stderr, /^stdin: line 1: invalid_json at \/: duplicate member name "sourceSeq"/);
    const missing = runPrp(["replay", join(root, "no-such-fixture.json")]);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /no-such-fixture\.json: unreadable at \/: ENOENT/);
  });

  it("refuses bad usage with exit 2, and explains itself in --help with examples", () => {
    assert.equal(runPrp(["replay"]).status, 2);
    assert.equal(runPrp(["replay", fixture("happy-path"), "--events", "-"]).status, 2);
    assert.equal(runPrp(["replay", "--json", "--summary", fixture("happy-path")]).status, 2);
    const help = runPrp(["replay", "--help"]);
    assert.equal(help.status, 0);
    for (const text of ["--events <file>", "--summary", "--json", "Examples:", "prp replay --events -"])
      assert.ok(help.stdout.includes(text), text);
    assert.match(runPrp(["--help"]).stdout, /replay/);
  });
});
