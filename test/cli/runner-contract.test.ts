import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { SqliteAuthorityStore } from "../../src/authority/sqlite-store.js";
import { readServerKeyFile } from "../../src/authority/server-key-source.js";
import { buildContractDigest } from "../../src/contract/fingerprint/committed-digest.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { ContractTrees, editJson, installCopy } from "../support/contract-tree.js";
import { runPrp } from "./run-cli.js";
import { PATIENT_HARNESS } from "../support/scripts.js";

const trees = new ContractTrees();
after(() => trees.cleanup());

const OURS = buildContractDigest();
/** A runner build whose contract adds an optional member to the result's open object: compatible both ways. */
const additive = installCopy(trees, (root) =>
  editJson(root, "protocol/schemas/result.schema.json", (j) => {
    j.properties.reviewer = { type: "string" };
  }),
);
/** A runner build whose contract adds a disposition: new authority documents an old runner would refuse. */
const breaking = installCopy(trees, (root) =>
  editJson(root, "protocol/schemas/terminal.schema.json", (j) => {
    j.properties.reportedWorkDisposition.enum.push("deferred");
  }),
);
const runnerdOf = (root: string) => join(root, "bin/prp-runnerd.js");
const metadata = (root: string) =>
  JSON.parse(
    spawnSync(process.execPath, [runnerdOf(root), "--build-metadata"], { encoding: "utf8", timeout: 30_000 }).stdout,
  );

function demo(args: string[]) {
  const out = mkdtempSync(join(tmpdir(), "prp-contract-demo-"));
  trees.track(out);
  const run = runPrp(["demo", "--delay-ms", "0", "--out", out, "--json", ...PATIENT_HARNESS, ...args]);
  return { run, out };
}

/** The authority's own record of refused handshakes, read from its store after the demo. */
async function authFailures(out: string, runId: string): Promise<Record<string, number>> {
  const dir = join(out, "demo", runId);
  const key = readServerKeyFile(join(dir, "authority-server-key"));
  const store = SqliteAuthorityStore.open(join(dir, "authority"), { serverKey: key });
  try {
    return await store.authFailures(runId);
  } finally {
    await store.close();
    key.destroy();
  }
}

describe("runner compatibility at the handshake", () => {
  it("a runner reports the contract it was built for in --build-metadata", () => {
    assert.equal(metadata(packageRoot()).contractDigest, OURS);
    const theirs = metadata(breaking).contractDigest;
    assert.match(theirs, /^sha256:[0-9a-f]{64}$/);
    assert.notEqual(theirs, OURS, "the copy's contract must differ, or the refusals below prove nothing");
  });

  it("refuses a runner built for another contract, with a reason a person can act on (prp demo, default policy equal)", async () => {
    const { run, out } = demo(["--runnerd", runnerdOf(additive)]);
    assert.equal(run.status, 1, run.stdout);
    const theirs = metadata(additive).contractDigest;
    assert.ok(
      run.stderr.includes(
        `contract_mismatch: runner built for contract ${theirs}, this control plane speaks ${OURS}: upgrade the runner image`,
      ),
      run.stderr,
    );
    assert.match(run.stderr, /the runner exited \(7\)/);
    assert.match(run.stderr, /prp-runnerd: contract_mismatch: .*the ticket is unspent/);
    const runId = /(run_[0-9a-z_]+)/.exec(run.stderr)![1]!;
    assert.deepEqual(await authFailures(out, runId), { contract_mismatch: 1 });
  });

  it("accepts it under --runner-contract any", () => {
    const { run } = demo(["--runnerd", runnerdOf(additive), "--runner-contract", "any"]);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout.trim().split("\n").pop()!).runTerminalState, "succeeded");
  });

  it("under compatible, accepts an archived contract whose change neither side notices, and refuses a breaking one naming it", () => {
    const archive = mkdtempSync(join(tmpdir(), "prp-contract-archive-"));
    trees.track(archive);
    for (const root of [additive, breaking]) {
      const exported = runPrp(["contract", "export", root, "--out", archive]);
      assert.equal(exported.status, 0, exported.stderr);
    }
    const ok = demo([
      "--runnerd",
      runnerdOf(additive),
      "--runner-contract",
      "compatible",
      "--contract-archive",
      archive,
    ]).run;
    assert.equal(ok.status, 0, ok.stderr);
    const refused = demo([
      "--runnerd",
      runnerdOf(breaking),
      "--runner-contract",
      "compatible",
      "--contract-archive",
      archive,
    ]).run;
    assert.equal(refused.status, 1);
    assert.match(
      refused.stderr,
      /contract_mismatch: runner built for contract sha256:[0-9a-f]{64}, this control plane speaks .*upgrade the runner image \(1 breaking change, first: enum_value_removed at https:\/\/paperclip.dev\/schemas\/prp\/v1\/terminal.schema.json#\/properties\/reportedWorkDisposition\/enum/,
    );
  });

  it("under compatible, refuses a contract it has no archive for", () => {
    const { run } = demo(["--runnerd", runnerdOf(additive), "--runner-contract", "compatible"]);
    assert.equal(run.status, 1);
    assert.match(run.stderr, /is not in a contract archive: start the authority with --contract-archive/);
  });
});
