import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ESLint, type Linter } from "eslint";
import { packageRoot } from "../../src/contract/package-root.js";

// The linter's import rules, made to fail: `npm run lint` passing means nothing unless the same
// configuration refuses an upward import and a cycle when one is written.
const root = packageRoot();
const eslint = new ESLint({ cwd: root });

async function lint(file: string, text: string): Promise<Linter.LintMessage[]> {
  const [result] = await eslint.lintText(text, { filePath: join(root, file) });
  return result!.messages;
}

const rules = (messages: Linter.LintMessage[]) => messages.map((m) => `${m.ruleId}: ${m.message}`);

describe("the layer rule of docs/architecture.md, enforced by the linter", () => {
  it("refuses an import from a higher layer, naming the rule", async () => {
    const messages = await lint(
      "src/contract/upward.ts",
      'import { STOP_SIGNALS } from "../runner/stop-signals.js";\nexport const signals = STOP_SIGNALS;\n',
    );
    const refusal = messages.find((m) => m.ruleId === "import-x/no-restricted-paths");
    assert.ok(refusal, `no layer refusal; the linter said: ${JSON.stringify(rules(messages))}`);
    assert.match(refusal.message, /the contract layer may import only the layers below it/);
  });

  it("lets a layer import a lower one", async () => {
    const messages = await lint(
      "src/runner/downward.ts",
      'import { MAX_PROTOCOL_VERSION } from "../contract/versions.js";\nexport const max = MAX_PROTOCOL_VERSION;\n',
    );
    assert.deepEqual(rules(messages), []);
  });

  it("refuses a file cycle, and passes the same file without it", async () => {
    // src/cli/demo.ts imports fault.ts: fault.ts importing demo.ts closes a cycle.
    const file = "src/cli/fault.ts";
    const text = readFileSync(join(root, file), "utf8");
    assert.deepEqual(rules(await lint(file, text)), [], "the file as committed lints clean");
    const cyclic = await lint(file, `import "./demo.js";\n${text}`);
    assert.ok(
      cyclic.some((m) => m.ruleId === "import-x/no-cycle"),
      `no cycle reported; the linter said: ${JSON.stringify(rules(cyclic))}`,
    );
  });
});
