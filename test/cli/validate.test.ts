import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { protocolDir } from "../../src/contract/package-root.js";
import { command, event, json } from "../contract/samples.js";
import { runPrp } from "./run-cli.js";
import { PATIENT_HARNESS } from "../support/scripts.js";

describe("prp validate", () => {
  let dir: string;
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-validate-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("prints ok with the kind for an accepted file and exits 0", () => {
    const ok = file("event.json", json(event(2)));
    const run = runPrp(["validate", ok]);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, `ok  event  ${ok}\n`);
  });

  it("prints the code, path and message of a rejected file and exits 1", () => {
    const bad = file("bad.json", json(command(1, { schema: "paperclip.prp.command.v4" })));
    const run = runPrp(["validate", bad]);
    assert.equal(run.status, 1);
    assert.match(
      run.stdout,
      /^rejected {2}unsupported_required_schema at \/schema: schema "paperclip\.prp\.command\.v4" is not a schema this contract implements {2}.*bad\.json {2}\(unexpected\)\n$/,
    );
  });

  it("--expect reject inverts the verdict that counts as success", () => {
    const bad = file("bad-version.json", json(event(1, { schemaVersion: 9 })));
    assert.equal(runPrp(["validate", "--expect", "reject", bad]).status, 0);
    assert.equal(runPrp(["validate", "--expect", "reject", file("good.json", json(event(1)))]).status, 1);
  });

  it("--json prints one object per file per line", () => {
    const good = file("good2.json", json(command(3)));
    const bad = file("trunc.json", json(command(3)).slice(0, 20));
    const run = runPrp(["validate", "--json", good, bad]);
    assert.equal(run.status, 1);
    const lines = run.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    assert.deepEqual(lines[0], { file: good, ok: true, kind: "command", code: null, path: null, message: null });
    assert.equal(lines[1].ok, false);
    assert.equal(lines[1].code, "invalid_json");
    assert.deepEqual(Object.keys(lines[1]), ["file", "ok", "kind", "code", "path", "message"]);
  });

  it("accepts the seeded bundle as upstream publishes it (receipt id receipt_evals_seeded) and still type-checks the receipt id", () => {
    const upstream = join(protocolDir(), "fixtures/evals/native-execution-upstream-receipt.json");
    const run = runPrp(["validate", "--verify-files", upstream]);
    assert.equal(run.status, 0, run.stdout);
    assert.equal(run.stdout, `ok  native-execution  ${upstream}\n`);
    const bundle = JSON.parse(readFileSync(upstream, "utf8"));
    bundle.events[1].payload.semantic_tool.operationReceiptId = 42;
    const bad = JSON.parse(
      runPrp(["validate", "--json", "--verify-files", file("receipt-id-number.json", json(bundle))]).stdout,
    );
    assert.deepEqual(
      [bad.ok, bad.code, bad.path],
      [false, "schema_validation", "/events/1/payload/semantic_tool/operationReceiptId"],
    );
  });

  it("reports an unreadable file as rejected instead of crashing", () => {
    const run = runPrp(["validate", "--json", join(dir, "missing.json")]);
    assert.equal(run.status, 1);
    assert.equal(JSON.parse(run.stdout).code, "unreadable");
  });

  it("--kind decodes documents without a discriminator and refuses an unknown kind", () => {
    const runtimeActivity = file("activity.json", json({ namespace: "ns", activityKey: "key" }));
    assert.equal(runPrp(["validate", "--kind", "runtime-activity", runtimeActivity]).status, 0);
    const wrong = runPrp(["validate", "--kind", "nonsense", runtimeActivity]);
    assert.equal(wrong.status, 2);
    assert.match(wrong.stderr, /unknown --kind "nonsense"/);
  });

  it("explains itself in --help, with examples", () => {
    const top = runPrp(["--help"]);
    assert.equal(top.status, 0);
    assert.match(top.stdout, /validate/);
    const help = runPrp(["validate", "--help"]);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /--expect <verdict>/);
    assert.match(help.stdout, /Examples:/);
  });

  describe("a bundle's events are one run's record (the binding rules)", () => {
    let good: { path: string; bundle: any };
    before(() => {
      const run = runPrp([
        "run",
        "--json",
        "--script",
        "happy-path",
        "--delay-ms",
        "0",
        "--run-id",
        "run_bound",
        "--out",
        dir,
        ...PATIENT_HARNESS,
      ]);
      assert.equal(run.status, 0, run.stderr);
      const path = join(dir, "runs", "run_bound", "native-execution.json");
      good = { path, bundle: JSON.parse(readFileSync(path, "utf8")) };
    });
    const verdictOf = (name: string, alter: (bundle: any) => void) => {
      const bundle = structuredClone(good.bundle);
      alter(bundle);
      return JSON.parse(runPrp(["validate", "--json", file(`${name}.json`, json(bundle))]).stdout);
    };
    const lastIndex = () => good.bundle.events.length - 1;

    it("passes the bundle prp run wrote, with its files", () => {
      const run = runPrp(["validate", "--verify-files", good.path]);
      assert.equal(run.status, 0, run.stdout);
      assert.ok(good.bundle.events.length > 3, "a run with events to alter");
      assert.equal(
        readFileSync(good.path, "utf8"),
        `${JSON.stringify(good.bundle)}\n`,
        "written as it grew, the bundle is still the bytes of JSON.stringify of the whole",
      );
    });

    const cases: Array<[string, (b: any) => void, string, () => string]> = [
      ["an event deleted", (b) => b.events.splice(2, 1), "sequence_gap", () => "/events/2/sourceSeq"],
      ["the first event deleted", (b) => b.events.splice(0, 1), "sequence_gap", () => "/events/0/sourceSeq"],
      ["the terminal deleted", (b) => b.events.pop(), "missing_terminal", () => `/events/${lastIndex()}`],
      [
        "an event repeated",
        (b) => b.events.splice(3, 0, structuredClone(b.events[2])),
        "duplicate_event_id",
        () => "/events/3/sourceEventId",
      ],
      [
        "an id reused with other content",
        (b) => {
          const forged = structuredClone(b.events[2]);
          forged.sourceSeq = b.events.length; // a new number, so only the id gives it away
          forged.payload = { ...forged.payload, forged: true };
          b.events.splice(lastIndex(), 0, forged);
          b.events.at(-1).sourceSeq = b.events.length;
        },
        "duplicate_event_id",
        () => `/events/${lastIndex()}/sourceEventId`,
      ],
      [
        "a second terminal",
        (b) =>
          b.events.push({
            ...structuredClone(b.events.at(-1)),
            sourceSeq: b.events.length + 1,
            sourceEventId: "event_run_bound_forged",
          }),
        "second_terminal",
        () => `/events/${lastIndex() + 1}`,
      ],
      [
        "a terminal that differs from the bundle's",
        (b) => (b.terminal.runTerminalState = b.terminal.runTerminalState === "succeeded" ? "failed" : "succeeded"),
        "terminal_mismatch",
        () => "/terminal",
      ],
      [
        "a gap in the sequence",
        (b) => b.events.slice(4).forEach((e: any) => (e.sourceSeq += 1)),
        "sequence_gap",
        () => "/events/4/sourceSeq",
      ],
      [
        "an event after the terminal",
        (b) =>
          b.events.push({
            ...structuredClone(b.events[1]),
            sourceSeq: b.events.length + 1,
            sourceEventId: "event_run_bound_late",
          }),
        "event_after_terminal",
        () => `/events/${lastIndex() + 1}`,
      ],
      ["another run's event", (b) => (b.events[1].runId = "run_other"), "run_mismatch", () => "/events/1/runId"],
      [
        "another session's event",
        (b) => (b.events[1].normalizedSessionId = "session_other"),
        "session_mismatch",
        () => "/events/1/normalizedSessionId",
      ],
    ];
    for (const [name, alter, code, path] of cases) {
      it(`refuses ${name}: ${code} at the event, with a message`, () => {
        const v = verdictOf(name.replace(/\W+/g, "-"), alter);
        assert.deepEqual([v.ok, v.kind, v.code, v.path], [false, "native-execution", code, path()], JSON.stringify(v));
        assert.ok(v.message.length > 20, v.message);
      });
    }

    it("tells an identical repeat from a forged one in its message", () => {
      const same = verdictOf("repeat-same", (b) => b.events.splice(3, 0, structuredClone(b.events[2])));
      assert.match(same.message, /repeats an earlier event exactly/);
      const other = verdictOf("repeat-other", (b) =>
        b.events.splice(3, 0, { ...structuredClone(b.events[2]), payload: { forged: true } }),
      );
      assert.match(other.message, /different content: a forgery/);
    });
  });
});
