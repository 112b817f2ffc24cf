import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { buildManifest, serialiseManifest } from "../../src/contract/manifest.js";
import { packageRoot, protocolDir } from "../../src/contract/package-root.js";

const checkManifest = (protocol: string) =>
  spawnSync(process.execPath, [join(packageRoot(), "dist/scripts/manifest.js"), "--check", "--protocol", protocol], {
    encoding: "utf8",
    timeout: 120_000,
  });

describe("protocol manifest", () => {
  let copy: string;
  before(() => {
    copy = mkdtempSync(join(tmpdir(), "prp-manifest-"));
  });
  after(() => rmSync(copy, { recursive: true, force: true }));

  const fresh = () => {
    rmSync(copy, { recursive: true, force: true });
    cpSync(protocolDir(), copy, { recursive: true });
    return copy;
  };

  it("is what the generator writes, with no problems", () => {
    const { manifest, problems } = buildManifest(protocolDir());
    assert.deepEqual(problems, []);
    assert.equal(serialiseManifest(manifest), readFileSync(join(protocolDir(), "manifest.json"), "utf8"));
    assert.equal(manifest.protocolVersion, 3);
    assert.ok(manifest.schemas.every((s) => /^[a-f0-9]{64}$/.test(s.sha256)));
    const paths = manifest.fixtures.map((f) => f.path);
    assert.deepEqual(paths, [...paths].sort());
  });

  it("passes its check on an unchanged copy", () => {
    const run = checkManifest(fresh());
    assert.equal(run.status, 0, run.stderr);
  });

  for (const file of ["schemas/terminal.schema.json", "fixtures/replay/happy-path.json"]) {
    it(`fails its check when one byte of ${file} changes`, () => {
      const dir = fresh();
      const path = join(dir, file);
      const text = readFileSync(path, "utf8");
      writeFileSync(path, text.replace("{", "{ ")); // one more byte: still valid JSON with the same meaning
      const run = checkManifest(dir);
      assert.equal(run.status, 1);
      assert.match(run.stderr, /out of date: .*manifest\.json/);
    });
  }

  it("ignores CRLF line endings, as wire.md §15.7 says", () => {
    const dir = fresh();
    const path = join(dir, "schemas/usage.schema.json");
    writeFileSync(path, readFileSync(path, "utf8").replace(/\n/g, "\r\n"));
    assert.equal(checkManifest(dir).status, 0);
  });

  it("fails when a fixture no longer gets its catalog verdict", () => {
    const dir = fresh();
    const catalog = JSON.parse(readFileSync(join(dir, "catalog.json"), "utf8"));
    catalog.fixtures["replay/happy-path.json"] = {
      expectation: "reject",
      compatibilityCase: "invalid-required-payload",
      code: "schema_validation",
    };
    writeFileSync(join(dir, "catalog.json"), JSON.stringify(catalog));
    const run = checkManifest(dir);
    assert.equal(run.status, 1);
    assert.match(run.stderr, /replay\/happy-path\.json must be rejected/);
  });

  it("fails when a fixture is missing from the catalog", () => {
    const dir = fresh();
    writeFileSync(join(dir, "fixtures/replay/stray.json"), "{}\n");
    const run = checkManifest(dir);
    assert.equal(run.status, 1);
    assert.match(run.stderr, /fixtures\/replay\/stray\.json is not in protocol\/catalog\.json/);
  });
});
