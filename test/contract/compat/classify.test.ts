import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, describe, it } from "node:test";
import type { Change, ChangeKind, Effect } from "../../../src/contract/compat/changes.js";
import { diffContracts, verdict } from "../../../src/contract/compat/classify.js";
import { packageRoot } from "../../../src/contract/package-root.js";
import { runPrp } from "../../cli/run-cli.js";
import { ContractTrees, editJson, editText } from "../../support/contract-tree.js";

const trees = new ContractTrees();
after(() => trees.cleanup());

const RESULT = "protocol/schemas/result.schema.json";
const USAGE = "protocol/schemas/usage.schema.json";
const TERMINAL = "protocol/schemas/terminal.schema.json";
const CREDENTIALS = "protocol/schemas/auth-credentials-updated.schema.json";
const EVENT_V3 = "protocol/schemas/event-v3.schema.json";

/** The changes from this package's contract to a copy changed by `change`. */
function changesFor(change: (root: string) => void): Change[] {
  const root = trees.copy();
  change(root);
  return diffContracts(packageRoot(), root);
}

const summary = (changes: Change[]) =>
  changes.map((c) => [c.kind, c.producer, c.consumer] as [ChangeKind, Effect, Effect]);

describe("prp contract diff: each kind of change, in both directions", () => {
  const cases: Array<[string, (root: string) => void, Array<[ChangeKind, Effect, Effect]>]> = [
    [
      "a new optional field on an open object",
      (r) =>
        editJson(r, RESULT, (j) => {
          j.properties.reviewer = { type: "string" };
        }),
      [["property_added", "compatible", "compatible"]],
    ],
    [
      "a new optional field on a closed object",
      (r) =>
        editJson(r, USAGE, (j) => {
          j.properties.region = { type: "string" };
        }),
      [["property_added", "compatible", "breaking"]],
    ],
    [
      "a new enum value",
      (r) =>
        editJson(r, TERMINAL, (j) => {
          j.properties.reportedWorkDisposition.enum.push("deferred");
        }),
      [["enum_value_added", "compatible", "breaking"]],
    ],
    [
      "a removed enum value",
      (r) =>
        editJson(r, TERMINAL, (j) => {
          j.properties.reportedWorkDisposition.enum.pop();
        }),
      [["enum_value_removed", "breaking", "compatible"]],
    ],
    [
      "a tightened limit",
      (r) =>
        editJson(r, CREDENTIALS, (j) => {
          j.properties.provider.maxLength = 80;
        }),
      [["limit_tightened", "breaking", "compatible"]],
    ],
    [
      "a loosened limit",
      (r) =>
        editJson(r, CREDENTIALS, (j) => {
          j.properties.provider.maxLength = 320;
        }),
      [["limit_loosened", "compatible", "breaking"]],
    ],
    [
      "a removed optional field of a closed object",
      (r) =>
        editJson(r, USAGE, (j) => {
          delete j.properties.providerSessionId;
        }),
      [["property_removed", "breaking", "compatible"]],
    ],
    [
      "a new required field",
      (r) =>
        editJson(r, RESULT, (j) => {
          j.properties.reviewer = { type: "string" };
          j.required.push("reviewer");
        }),
      [["required_property_added", "breaking", "compatible"]],
    ],
    [
      "a new event type with its payload binding",
      (r) =>
        editJson(r, EVENT_V3, (j) => {
          j.properties.eventType.enum.push("session.paused");
          j.allOf.push({
            if: { type: "object", required: ["eventType"], properties: { eventType: { const: "session.paused" } } },
            then: { type: "object", properties: { payload: { type: "object" } } },
          });
        }),
      [
        ["event_type_added", "compatible", "breaking"],
        ["payload_binding_added", "compatible", "breaking"],
      ],
    ],
    [
      "a new payload rule on an existing event type",
      (r) =>
        editJson(r, EVENT_V3, (j) => {
          j.allOf.push({
            if: { type: "object", required: ["eventType"], properties: { eventType: { const: "run.terminal" } } },
            then: { required: ["turnId"] },
          });
        }),
      [["constraint_added", "breaking", "compatible"]],
    ],
    [
      "a changed const",
      (r) =>
        editJson(r, TERMINAL, (j) => {
          j.properties.schema.const = "paperclip.prp.terminal.v2";
        }),
      [["const_changed", "breaking", "breaking"]],
    ],
    [
      "a new reserved environment key",
      (r) =>
        editText(r, "src/contract/reserved-environment.ts", (t) =>
          t.replace(
            '"PAPERCLIP_RUNNER_BOOTSTRAP_TICKET",',
            '"PAPERCLIP_RUNNER_BOOTSTRAP_TICKET",\n  "PAPERCLIP_SANDBOX_ID",',
          ),
        ),
      [["code_source_changed", "breaking", "breaking"]],
    ],
    [
      "only annotations",
      (r) =>
        editJson(r, RESULT, (j) => {
          j.description = "Reworded.";
          j.title = "Renamed";
          j.$comment = "x";
        }),
      [],
    ],
  ];
  for (const [what, change, expected] of cases) {
    it(`classifies ${what}`, () => {
      assert.deepEqual(summary(changesFor(change)), expected);
    });
  }

  it("finds nothing between a tree and itself", () => {
    assert.deepEqual(diffContracts(packageRoot(), trees.copy()), []);
  });

  it("reports where each change is: the schema's $id and a pointer", () => {
    const [c] = changesFor((r) =>
      editJson(r, CREDENTIALS, (j) => {
        j.properties.provider.maxLength = 80;
      }),
    );
    assert.equal(c!.schema, "https://paperclip.dev/schemas/prp/v1/auth-credentials-updated.schema.json");
    assert.equal(c!.pointer, "/properties/provider/maxLength");
    assert.match(c!.detail, /160 → 80/);
  });

  it("judges a direction by its breaking changes only", () => {
    const changes = changesFor((r) =>
      editJson(r, TERMINAL, (j) => {
        j.properties.reportedWorkDisposition.enum.push("deferred");
      }),
    );
    assert.deepEqual(
      [
        verdict(changes, "producer").compatible,
        verdict(changes, "consumer").compatible,
        verdict(changes, "both").compatible,
      ],
      [true, false, false],
    );
  });
});

describe("prp contract diff on the command line", () => {
  it("exits by the direction asked, and --json lists the changes", () => {
    const root = trees.copy();
    editJson(root, TERMINAL, (j) => {
      j.properties.reportedWorkDisposition.enum.push("deferred");
    });
    const producer = runPrp(["contract", "diff", packageRoot(), root, "--direction", "producer"]);
    assert.equal(producer.status, 0, producer.stderr);
    assert.match(producer.stdout, /compatible for producers/);
    const consumer = runPrp(["contract", "diff", packageRoot(), root, "--direction", "consumer", "--json"]);
    assert.equal(consumer.status, 1, consumer.stderr);
    const report = JSON.parse(consumer.stdout);
    assert.equal(report.compatible, false);
    assert.deepEqual(
      report.changes.map((c: Change) => c.kind),
      ["enum_value_added"],
    );
  });

  it("reads git revisions", () => {
    const repo = trees.copy();
    const git = (...args: string[]) =>
      execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", ...args], {
        encoding: "utf8",
      });
    git("init", "-q");
    git("add", "-A");
    git("commit", "-q", "-m", "one");
    editJson(repo, USAGE, (j) => {
      j.properties.region = { type: "string" };
    });
    git("commit", "-q", "-am", "two");
    const run = runPrp(["contract", "diff", "HEAD~1", "HEAD", "--repo", repo, "--json"]);
    assert.equal(run.status, 1, run.stderr);
    assert.deepEqual(
      JSON.parse(run.stdout).changes.map((c: Change) => [c.kind, c.pointer]),
      [["property_added", "/properties/region"]],
    );
    const digest = runPrp(["contract", "digest", "HEAD~1", "--repo", repo]);
    assert.equal(digest.status, 0, digest.stderr);
    assert.equal(digest.stdout.split("\n")[0], runPrp(["contract", "digest"]).stdout.split("\n")[0]);
  });

  it("refuses a bad direction, a missing tree and a folder that is not a contract", () => {
    const bad = runPrp(["contract", "diff", packageRoot(), "--direction", "sideways"]);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--direction must be producer, consumer or both/);
    const missing = runPrp(["contract", "diff", "no-such-revision-or-folder"]);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /tree_not_found: no-such-revision-or-folder is neither a folder nor a git revision/);
    const notContract = runPrp(["contract", "diff", trees.copy() + "/src"]);
    assert.equal(notContract.status, 2);
    assert.match(notContract.stderr, /tree_not_a_contract/);
  });
});

describe("prp contract digest on the command line", () => {
  it("prints the committed digest and every source, and fails on a missing source", () => {
    const run = runPrp(["contract", "digest", "--json"]);
    assert.equal(run.status, 0, run.stderr);
    const out = JSON.parse(run.stdout);
    assert.match(out.contractDigest, /^sha256:[0-9a-f]{64}$/);
    assert.ok(out.sources.some((s: { source: string }) => s.source === "src/contract/reserved-environment.ts"));
    const root = trees.copy();
    editText(root, "src/transport/envelope.ts", (t) =>
      t.replace("export const IDENTITY_FIELDS", "export const IDENTITY_MEMBERS"),
    );
    const broken = runPrp(["contract", "digest", root]);
    assert.equal(broken.status, 1);
    assert.match(broken.stderr, /source_missing at src\/transport\/envelope.ts#IDENTITY_FIELDS/);
  });
});
