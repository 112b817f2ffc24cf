import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { loadCatalog, type AgentProfile } from "../../src/agents/catalog.js";
import { advertisedAgents, initializeProber, type AgentProber } from "../../src/worker/advertise.js";
import { TEST_AGENTS_DIR } from "../support/agents-cache.js";
import { writeTestAgentCatalog } from "../support/user-catalog.js";

describe("the agents a worker advertises", () => {
  const dir = mkdtempSync(join(tmpdir(), "prp-advertise-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const emptyAgentsDir = join(dir, "agents");
  const profiles = (): AgentProfile[] => {
    const loaded = loadCatalog(writeTestAgentCatalog(dir, "streamed-answer"));
    if (!loaded.ok) throw new Error(loaded.error.message);
    return loaded.value;
  };

  it("named: advertised as given when the catalog has each; an unknown name is refused, listing the names", async () => {
    const lines: string[] = [];
    const never: AgentProber = () => assert.fail("named agents are not probed");
    const named = await advertisedAgents(["claude", "sdk-test"], profiles(), emptyAgentsDir, never, (l) =>
      lines.push(l),
    );
    assert.deepEqual(named, { ok: true, value: ["claude", "sdk-test"] });
    const unknown = await advertisedAgents(["claud"], profiles(), emptyAgentsDir, never, (l) => lines.push(l));
    assert.equal(unknown.ok, false);
    assert.match(!unknown.ok ? unknown.error.message : "", /no agent named "claud": the catalog has claude, codex/);
  });

  it("auto: probes each installed profile, advertises the ready ones, one line per agent with its verdict", async () => {
    const lines: string[] = [];
    const asked: string[] = [];
    const probe: AgentProber = async (p) => {
      asked.push(p.name);
      return { verdict: p.name === "sdk-test" ? "ready" : "needs_auth" };
    };
    const auto = await advertisedAgents("auto", profiles(), emptyAgentsDir, probe, (l) => lines.push(l));
    assert.deepEqual(auto, { ok: true, value: ["sdk-test"] });
    assert.deepEqual(asked, ["sdk-test"], "a package profile not installed here is not started");
    assert.deepEqual(lines, [
      "agent claude: not installed",
      "agent codex: not installed",
      "agent gemini: not installed",
      "agent opencode: not installed",
      "agent sdk-test: ready",
    ]);
  });

  it("auto: a probe that fails, or a verdict other than ready, is not advertised", async () => {
    const lines: string[] = [];
    const probe: AgentProber = async (p) => {
      if (p.name === "sdk-test") throw new Error("exited before initialize");
      return { verdict: "needs_auth" };
    };
    const auto = await advertisedAgents("auto", profiles(), TEST_AGENTS_DIR, probe, (l) => lines.push(l));
    assert.deepEqual(auto, { ok: true, value: [] });
    assert.ok(lines.includes("agent sdk-test: broken (exited before initialize)"), lines.join("\n"));
    assert.ok(lines.includes("agent claude: needs_auth"), "the installed claude was probed");
  });

  it("auto: only the exact verdict ready advertises: a verdict an agent's output could shape is not", async () => {
    const probe: AgentProber = async () => ({ verdict: "ready\n\u001b[2Kagent claude: ready" });
    const auto = await advertisedAgents("auto", profiles(), emptyAgentsDir, probe, () => {});
    assert.deepEqual(auto, { ok: true, value: [] });
  });

  it("the worker's prober starts the agent and completes initialize: the SDK test agent, needing no login, is ready", async () => {
    const lines: string[] = [];
    const auto = await advertisedAgents(
      "auto",
      profiles(),
      emptyAgentsDir,
      initializeProber(emptyAgentsDir, join(dir, "probe"), []),
      (l) => lines.push(l),
    );
    assert.deepEqual(auto, { ok: true, value: ["sdk-test"] });
    assert.ok(lines.includes("agent sdk-test: ready"), lines.join("\n"));
  });

  it("the worker's prober says why an agent is not ready: one that exits before initialize is broken, not advertised", async () => {
    const profile: AgentProfile = {
      ...profiles().find((p) => p.name === "sdk-test")!,
      launch: { command: "exit 7", args: [] },
    };
    const verdict = await initializeProber(emptyAgentsDir, join(dir, "probe"), [])(profile);
    assert.deepEqual(verdict, { verdict: "broken", cause: "agent_exited_before_initialize" });
  });
});
