import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";
import { runPrp } from "./run-cli.js";

const runnerd = (args: string[]) =>
  spawnSync(process.execPath, [join(packageRoot(), "bin/prp-runnerd.js"), ...args], {
    encoding: "utf8",
    timeout: 60_000,
  });

describe("a command line the CLI cannot use exits 2, with the reason and a pointer to --help", () => {
  const usage: Array<[string, string[], RegExp]> = [
    ["an unknown command", ["nosuch"], /unknown command 'nosuch'/],
    ["an unknown option", ["run", "--bogus"], /unknown option '--bogus'/],
    [
      "a refused option value",
      ["run", "--script", "happy-path", "--harness-ready-ms", "0"],
      /--harness-ready-ms <n>' argument '0' is invalid/,
    ],
    [
      "a protocol version out of range, two commands deep",
      ["authority", "run", "create", "--protocol-version", "4", "--store", "sqlite:unused"],
      /expected a protocol version in 1-3/,
    ],
    ["a missing argument", ["authority", "ticket", "--store", "sqlite:unused"], /missing required argument/],
    ["a command group without its subcommand", ["authority"], /Usage: prp authority/],
  ];
  for (const [what, args, reason] of usage) {
    it(`prp: ${what}`, () => {
      const run = runPrp(args);
      assert.equal(run.status, 2, `prp ${args.join(" ")} exited ${run.status}: ${run.stderr}`);
      assert.match(run.stderr, reason);
    });
  }

  it("prp-runnerd: an unknown option and its own misconfiguration alike", () => {
    const unknown = runnerd(["--bogus"]);
    assert.equal(unknown.status, 2, unknown.stderr);
    assert.match(unknown.stderr, /unknown option '--bogus'/);
    const neither = runnerd([]);
    assert.equal(neither.status, 2, neither.stderr);
    assert.match(neither.stderr, /choose one mode/);
  });

  it("help and version still exit 0", () => {
    for (const args of [["--help"], ["-V"], ["run", "--help"], ["authority", "run", "--help"]])
      assert.equal(runPrp(args).status, 0, `prp ${args.join(" ")}`);
    assert.equal(runnerd(["--help"]).status, 0);
  });
});
