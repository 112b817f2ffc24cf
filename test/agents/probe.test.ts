import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { AgentProfile } from "../../src/agents/catalog.js";
import { probeAgent, type ProbeOptions, type ProbeReport } from "../../src/agents/probe.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { installedProfile, TEST_AGENTS_DIR } from "../support/agents-cache.js";
import { describeProcesses, liveGroupMembers } from "../support/processes.js";
import { within } from "../support/within.js";
import { probeAgentProfile, TOKEN_ENV } from "./probe-catalog.js";

const TOKEN = "prp-probe-token-7f3a9c";

describe("probeAgent", () => {
  let home: string;
  before(() => {
    home = mkdtempSync(join(tmpdir(), "prp-probe-home-"));
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  /** Probes with a bounded wait, then checks that nothing of the agent's group is left. */
  async function probe(profile: AgentProfile, options: Partial<ProbeOptions> = {}): Promise<ProbeReport> {
    const report = await within(
      probeAgent(profile, { agentsDir: TEST_AGENTS_DIR, home, timeoutMs: 30_000, ...options }),
      60_000,
      `the probe of ${profile.name}`,
    );
    if (report.pid !== null)
      assert.deepEqual(
        liveGroupMembers(report.pid),
        [],
        `nothing of ${profile.name}'s group ${report.pid} outlives the probe: ${describeProcesses(liveGroupMembers(report.pid))}`,
      );
    return report;
  }

  it("an agent that advertises auth methods is ready with its credential variable, needs_auth without", async () => {
    const [withToken, without] = await Promise.all([
      probe(probeAgentProfile("answer"), { env: { [TOKEN_ENV]: TOKEN } }),
      probe(probeAgentProfile("answer")),
    ]);
    assert.equal(withToken.verdict, "ready", withToken.message);
    assert.deepEqual(withToken.credentials.sources, [
      { kind: "env", name: TOKEN_ENV, present: true },
      { kind: "file", name: "~/.probe/token", present: false },
    ]);
    assert.equal(withToken.protocolVersion, 1);
    assert.deepEqual(withToken.authMethods, [{ id: "token", name: "PRP test token" }]);
    assert.equal(withToken.agentInfo?.name, "probe-agent");
    assert.ok(withToken.initializeMs !== null && withToken.initializeMs >= 0);
    assert.equal(JSON.stringify(withToken).includes(TOKEN), false, "the token's value is in no report");
    // A capability the profile expects and the agent lacks is a warning, not a failure.
    assert.deepEqual(withToken.expectations, { missingCapabilities: ["loadSession"], missingAuthMethods: [] });
    assert.match(withToken.warnings.join("\n"), /does not offer the capability loadSession/);

    assert.equal(without.verdict, "needs_auth");
    assert.equal(without.fix, `pass --agent-env ${TOKEN_ENV}=…`);
    assert.equal(without.cause, null);
  });

  it("a credential file under HOME is a present source: only its existence is read", async () => {
    const own = mkdtempSync(join(tmpdir(), "prp-probe-login-"));
    try {
      mkdirSync(join(own, ".probe"));
      writeFileSync(join(own, ".probe/token"), TOKEN);
      const report = await probe(probeAgentProfile("answer"), { home: own });
      assert.equal(report.verdict, "ready", report.message);
      assert.equal(JSON.stringify(report).includes(TOKEN), false);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });

  it("an SDK agent that asks for no authentication is ready", async () => {
    const profile: AgentProfile = {
      ...probeAgentProfile("sdk"),
      launch: {
        command: process.execPath,
        args: [join(packageRoot(), "dist/src/harness/acp/test-agent-process.js"), "--scenario", "streamed-answer"],
      },
    };
    const report = await probe(profile);
    assert.equal(report.verdict, "ready", report.message);
    assert.deepEqual(report.authMethods, []);
    assert.equal(report.agentInfo?.name, "prp-kit-acp-test-agent");
  });

  it("stdout garbage and a line over the limit before the answer are warnings; the answer counts", async () => {
    const report = await probe(probeAgentProfile("garbage"), { env: { [TOKEN_ENV]: TOKEN } });
    assert.equal(report.verdict, "ready", report.message);
    assert.match(report.warnings.join("\n"), /wrote 3 stdout lines that are not JSON/);
    assert.match(report.warnings.join("\n"), /stdout line of 200000 bytes, over the 65536-byte limit/);
  });

  it("an agent that never answers is broken: initialize_timeout; its group, SIGTERM-deaf child included, is ended", async () => {
    const report = await probe(probeAgentProfile("silent"), { timeoutMs: 1_000 });
    assert.equal(report.verdict, "broken");
    assert.equal(report.cause, "initialize_timeout");
    assert.match(report.message, /within 1000 ms/);
    assert.equal(report.initializeMs, null);
  });

  it("an agent that exits at once is broken: its exit code and its stderr tail, credentials redacted", async () => {
    const report = await probe(probeAgentProfile("exit"), { env: { [TOKEN_ENV]: TOKEN } });
    assert.equal(report.cause, "agent_exited_before_initialize", report.message);
    assert.deepEqual(report.exit, { exitCode: 7, signal: null });
    assert.match(report.message, /exited with code 7 before it answered initialize/);
    assert.deepEqual(report.stderrTail, [
      "starting",
      "ANTHROPIC_API_KEY=[redacted]",
      "Authorization: [redacted]",
      "token [redacted]",
      "fatal: cannot start",
    ]);
    const text = JSON.stringify(report);
    for (const secret of [TOKEN, "sk-ant-api03", "abc.def.ghi"]) assert.equal(text.includes(secret), false, secret);
  });

  it("protocol version 99 is broken: unsupported_protocol_version, with what it said", async () => {
    const report = await probe(probeAgentProfile("version99"));
    assert.equal(report.cause, "unsupported_protocol_version");
    assert.equal(report.protocolVersion, 99);
    assert.match(report.message, /version 99; PRP Kit speaks only version 1/);
  });

  it("a JSON-RPC error is initialize_failed with its message, redacted", async () => {
    const report = await probe(probeAgentProfile("error"));
    assert.equal(report.cause, "initialize_failed");
    assert.match(report.message, /refused initialize: boom: api_key=\[redacted\] \(JSON-RPC error -32603\)/);
    assert.equal(JSON.stringify(report).includes("sk-secret"), false);
  });

  it("an answer the SDK refuses, or that is no InitializeResponse, is invalid_response", async () => {
    const [refused, notObject] = await Promise.all([
      probe(probeAgentProfile("invalid")),
      probe(probeAgentProfile("not-object")),
    ]);
    assert.equal(refused.cause, "invalid_response", refused.message);
    assert.match(refused.message, /the ACP SDK refused/);
    assert.equal(notObject.cause, "invalid_response", notObject.message);
    assert.match(notObject.message, /not an object/);
  });

  it("a package profile at a version that is not installed is agent_not_installed: nothing started", async () => {
    const claude = installedProfile("claude");
    const report = await probe({ ...claude, launch: { ...claude.launch, version: "9.9.9" } as AgentProfile["launch"] });
    assert.equal(report.verdict, "broken");
    assert.equal(report.cause, "agent_not_installed");
    assert.equal(report.pid, null);
    assert.equal(report.fix, "run `prp agents install claude`");
  });
});
