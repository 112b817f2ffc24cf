import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { packageRoot } from "../../src/contract/package-root.js";

const run = promisify(execFile);
const root = packageRoot();
const EXAMPLE = join(root, "docs/examples/library.ts");

/** A command with a deadline; its output in the failure, so a hang or a refusal says what it was. */
async function step(what: string, command: string, args: string[], cwd: string, timeoutMs: number): Promise<string> {
  try {
    const { stdout } = await run(command, args, {
      cwd,
      timeout: timeoutMs,
      killSignal: "SIGKILL",
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, npm_config_update_notifier: "false" },
    });
    return stdout;
  } catch (error) {
    const e = error as { killed?: boolean; stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${what}${e.killed ? `: not done within ${timeoutMs} ms` : ""}: ${e.message}\n${e.stdout ?? ""}\n${e.stderr ?? ""}`,
      { cause: error },
    );
  }
}

describe("the package as a user gets it", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-consumer-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("the README's library example is docs/examples/library.ts, verbatim", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const example = readFileSync(EXAMPLE, "utf8");
    assert.ok(
      readme.includes("```ts\n" + example + "```\n"),
      "README.md must hold docs/examples/library.ts verbatim in a ```ts block: copy the file there",
    );
  });

  it("installs from its tarball; the example type-checks against the shipped types and runs a durable run", async () => {
    // --ignore-scripts: `prepare` would build again what dist/ already holds.
    await step("npm pack", "npm", ["pack", "--ignore-scripts", "--pack-destination", dir], root, 120_000);
    const tarball = join(
      dir,
      readdirSync(dir).find((name) => name.endsWith(".tgz"))!,
    );
    const listing = await step("tar", "tar", ["tzf", tarball], dir, 30_000);
    for (const path of [
      "package/bin/prp-runnerd.js",
      "package/dist/src/runner/index.d.ts",
      "package/dist/src/contract/generated/validators.cjs",
      "package/dist/src/client/index.d.ts",
      "package/dist/src/contract/api/generated/types.d.ts",
      "package/protocol/contract-digest.json",
    ]) {
      assert.ok(listing.includes(`${path}\n`), `${path} is missing from the tarball`);
    }
    assert.ok(!/^package\/(dist\/)?(test|bench|scripts)\//m.test(listing), "tests, benches or scripts were packed");

    const app = join(dir, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    // From the npm cache only: no test may depend on the registry. --ignore-scripts skips the
    // minutes-long native build of better-sqlite3; the repo's build of the same version is copied in.
    const install = (mode: string) =>
      step(
        `npm install ${mode}`,
        "npm",
        ["install", mode, "--ignore-scripts", "--no-audit", "--no-fund", tarball],
        app,
        300_000,
      );
    await install("--offline").catch(() => install("--prefer-offline"));
    const sqlite = (base: string) => join(base, "node_modules/better-sqlite3");
    const sqliteVersion = (base: string) =>
      (JSON.parse(readFileSync(join(sqlite(base), "package.json"), "utf8")) as { version: string }).version;
    assert.equal(sqliteVersion(app), sqliteVersion(root), "the consumer got another better-sqlite3 than the repo's");
    mkdirSync(join(sqlite(app), "build/Release"), { recursive: true });
    copyFileSync(
      join(sqlite(root), "build/Release/better_sqlite3.node"),
      join(sqlite(app), "build/Release/better_sqlite3.node"),
    );

    const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
    assert.equal(
      (
        await step("prp --version", process.execPath, [join(app, "node_modules/.bin/prp"), "--version"], app, 60_000)
      ).trim(),
      version.version,
    );

    copyFileSync(EXAMPLE, join(app, "library.ts"));
    // prp-kit/client: its shipped declarations type-check, and it loads.
    writeFileSync(
      join(app, "client.ts"),
      [
        'import { PrpApiError, PrpClient, type CommittedEvent, type Run } from "prp-kit/client";',
        'const client = new PrpClient({ baseUrl: "http://127.0.0.1:1", token: "t" });',
        "export const follow: (id: string) => AsyncIterable<CommittedEvent> = (id) => client.follow(id);",
        "export const get: (id: string) => Promise<Run> = (id) => client.getRun(id);",
        'console.log(typeof client.follow, new PrpApiError(404, "unknown_run", "no such run").code);',
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          outDir: "out",
          // The shipped declarations are checked too: no skipLibCheck.
          skipLibCheck: false,
          types: ["node"],
        },
        files: ["library.ts", "client.ts"],
      }),
    );
    await step("tsc", process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "."], app, 180_000);
    const output = await step("the example", process.execPath, [join(app, "out/library.js")], app, 120_000);
    assert.match(output, /^\d+ events committed, the last run\.terminal\n$/);
    assert.equal(
      await step("prp-kit/client", process.execPath, [join(app, "out/client.js")], app, 60_000),
      "function unknown_run\n",
    );
  });
});
