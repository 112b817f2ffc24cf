import assert from "node:assert/strict";
import { cpSync } from "node:fs";
import { after, describe, it } from "node:test";
import { runnerContractCheck } from "../../src/authority/runner-contract.js";
import { ContractTrees, editJson } from "../support/contract-tree.js";

const trees = new ContractTrees();
after(() => trees.cleanup());

const OURS = `sha256:${"a".repeat(64)}`;
const THEIRS = `sha256:${"b".repeat(64)}`;

describe("runnerContractCheck", () => {
  it("equal: the same digest passes; another, or none, is refused with contract_mismatch", () => {
    const check = runnerContractCheck({ policy: "equal", digest: OURS });
    assert.equal(check(OURS), null);
    const other = check(THEIRS);
    assert.equal(other?.code, "contract_mismatch");
    assert.equal(
      other?.message,
      `runner built for contract ${THEIRS}, this control plane speaks ${OURS}: upgrade the runner image`,
    );
    assert.match(check(undefined)?.message ?? "", /reports no contract digest/);
  });

  it("any: every runner passes, with or without a digest", () => {
    const check = runnerContractCheck({ policy: "any", digest: OURS });
    assert.deepEqual([check(THEIRS), check(undefined)], [null, null]);
  });

  it("compatible: judges by the archived tree, by the direction each schema's documents travel", () => {
    const authority = trees.copy();
    const archive = trees.copy();
    // The runner's contract, archived under its digest's hex; the authority's changes one step at a time.
    const runnerTree = `${archive}/${"b".repeat(64)}`;
    cpSync(trees.copy(), runnerTree, { recursive: true });
    const check = () => runnerContractCheck({ policy: "compatible", digest: OURS, archive, root: authority })(THEIRS);
    assert.equal(check(), null, "identical trees under two digests are compatible");
    editJson(authority, "protocol/schemas/result.schema.json", (j) => {
      j.properties.reviewer = { type: "string" };
    });
    assert.equal(check(), null, "an optional member of an open payload is compatible both ways");
    editJson(authority, "protocol/schemas/terminal.schema.json", (j) => {
      j.properties.reportedWorkDisposition.enum.push("deferred");
    });
    assert.match(
      check()?.message ?? "",
      /1 breaking change, first: enum_value_added at .*terminal\.schema\.json#\/properties\/reportedWorkDisposition\/enum/,
    );
  });

  it("compatible: an event type only the authority knows does not break a runner that never sends it", () => {
    const authority = trees.copy();
    const archive = trees.copy();
    const runnerTree = `${archive}/${"b".repeat(64)}`;
    cpSync(trees.copy(), runnerTree, { recursive: true });
    editJson(authority, "protocol/schemas/event-v3.schema.json", (j) => {
      j.properties.eventType.enum.push("session.paused");
    });
    assert.equal(runnerContractCheck({ policy: "compatible", digest: OURS, archive, root: authority })(THEIRS), null);
    // The same change to the commands the runner must read is refused.
    editJson(authority, "protocol/schemas/command-v3.schema.json", (j) => {
      j.properties.type.enum.push("session.pause");
    });
    assert.match(
      runnerContractCheck({ policy: "compatible", digest: OURS, archive, root: authority })(THEIRS)?.message ?? "",
      /enum_value_added at .*v3\/command\.schema\.json/,
    );
  });
});
