import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import { packageRoot } from "../../../src/contract/package-root.js";

/**
 * Every secret below contains this marker and nothing else in a run does: a record is clean
 * when the marker appears nowhere in its bytes.
 */
export const SECRET_MARK = "SEKRIT";

/**
 * Beside each channel's secrets, text that must arrive: it proves the channel reached an event,
 * so a channel that silently stopped carrying anything does not pass as redacted.
 */
export const CANARIES = [
  "canary-info",
  "canary-config",
  "canary-plan",
  "canary-command",
  "canary-title",
  "canary-output",
  "canary-path",
  "canary-notrpc",
  "canary-mode",
  "canary-cap",
  "canary-session-config",
];

const s = (what: string) => `${SECRET_MARK}-${what}-1`;

/** The credentials the brief names, under the keys that used to leave them in clear. */
const KEYED_SECRETS = {
  APITOKEN: s("apitoken"),
  SECRETKEY: s("secretkey"),
  secrets: { db: s("db") },
  tokens: [s("tokens")],
  apiKeys: [s("apikeys")],
  private_keys: [s("private-keys")],
  ssh_key: s("ssh-key"),
  auth: s("auth"),
  bearer: s("bearer"),
  pwd: s("pwd"),
  headers: [{ name: "Authorization", value: `Bearer ${SECRET_MARK}0header0token1` }],
};

/** An ACP test agent scenario (a file for test-agent-process) that sends credentials through every channel the projection copies from. */
export function writeSecretsScenario(dir: string): string {
  const raw = (update: Record<string, unknown>) => ({
    kind: "raw",
    message: { jsonrpc: "2.0", method: "session/update", params: { sessionId: "acp_test_session_1", update } },
  });
  const rawInput = {
    path: "canary-path",
    pwd: s("rawinput-pwd"),
    env: [{ name: "GITHUB_TOKEN", value: s("rawinput-env") }],
    args: ["--token", s("rawinput-flag")],
  };
  const toolCall = {
    toolCallId: "call_read_1",
    title: `curl -H 'Authorization: Bearer ${SECRET_MARK}0title0token1' canary-title`,
    kind: "read",
    rawInput,
  };
  const scenario = {
    schema: "prp_kit.acp_test_agent.scenario.v1",
    name: "secrets",
    description: "credentials through every channel",
    capabilityExtras: { _meta: { vendor: { canary: "canary-cap", bearer: s("cap-meta") } } },
    sessionExtras: {
      modes: {
        currentModeId: "canary-mode",
        availableModes: [{ id: "canary-mode", name: "Default", _meta: { session_token: s("mode-meta") } }],
      },
      configOptions: [
        { id: "api_key", name: "API key", type: "select", currentValue: s("session-config"), options: [] },
        { id: "model", name: "Model", type: "select", currentValue: "canary-session-config", options: [] },
      ],
    },
    steps: [
      {
        kind: "update",
        update: { sessionUpdate: "session_info_update", title: "canary-info", _meta: { ...KEYED_SECRETS } },
      },
      raw({
        sessionUpdate: "session_info_update",
        title: "canary-info",
        ...KEYED_SECRETS,
        author: "canary-info-author",
      }),
      raw({
        sessionUpdate: "config_option_update",
        configOptions: [
          {
            id: "model",
            name: "Model",
            type: "select",
            currentValue: "canary-config",
            options: [{ value: "canary-config", name: "Fast" }],
            _meta: { apiKey: s("config-meta") },
          },
          {
            id: "api_key",
            name: "API key",
            type: "select",
            currentValue: s("config-value"),
            options: [{ value: s("config-option"), name: "API key" }],
          },
        ],
      }),
      raw({
        sessionUpdate: "available_commands_update",
        availableCommands: [
          { name: "canary-command", description: "d", input: { hint: "h" }, _meta: { private_key: s("command-meta") } },
        ],
        _meta: { token: s("commands-meta") },
      }),
      raw({
        sessionUpdate: "plan",
        entries: [
          {
            content: `canary-plan: call with Authorization: Bearer ${SECRET_MARK}0plan0token1`,
            priority: "high",
            status: "pending",
            _meta: { token: s("plan-entry-meta") },
          },
        ],
        _meta: { secret: s("plan-meta") },
      }),
      raw({ sessionUpdate: "tool_call", ...toolCall, status: "pending" }),
      raw({
        sessionUpdate: "tool_call_update",
        toolCallId: "call_read_1",
        status: "in_progress",
        content: [
          {
            type: "content",
            content: {
              type: "text",
              text: `canary-output OPENAI_API_KEY=sk-proj-${SECRET_MARK}0output0abcdefghij12345 ghp_${SECRET_MARK}0123456789abcdefghijklmnopqrstu`,
            },
          },
        ],
        rawOutput: { access_token: s("raw-output"), canary: "canary-raw-output" },
      }),
      {
        kind: "permission",
        toolCall,
        options: [
          { optionId: "allow", name: "Allow", kind: "allow_once" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ],
      },
      { kind: "raw", message: { hello: "canary-notrpc", password: s("not-jsonrpc") } },
      { kind: "stderr", text: `Authorization: Bearer ${SECRET_MARK}0stderr0token1` },
      { kind: "update", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "done" } } },
    ],
  };
  const path = join(dir, "secrets.json");
  writeFileSync(path, JSON.stringify(scenario));
  return path;
}

/**
 * A hand-written ACP agent (the SDK cannot write what it would refuse) that answers `initialize`
 * and `session/new`, then writes a JSON line nested 32,000 deep — under the 64 KiB line limit —
 * as its `initialize` answer (`initialize`) or as a session update in the turn (`prompt`):
 * `node deep-agent.mjs initialize|prompt [LOG]`, which records its PID namespace in LOG. It is
 * written into `dir`, which must be visible to it (its cwd, when it runs in the sandbox).
 */
export function writeDeepAgent(dir: string): string {
  const path = join(dir, "deep-agent.mjs");
  const pidNamespace = pathToFileURL(join(packageRoot(), "dist/test/harness/acp/pid-namespace.js")).href;
  writeFileSync(
    path,
    `
import { createInterface } from "node:readline";
import { recordPidNamespace } from ${JSON.stringify(pidNamespace)};
const where = process.argv[2];
if (process.argv[3]) recordPidNamespace(process.argv[3]);
const deep = "[".repeat(32000) + "]".repeat(32000);
const send = (text) => process.stdout.write(text + "\\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") send(where === "initialize"
    ? \`{"jsonrpc":"2.0","id":\${m.id},"result":{"protocolVersion":1,"agentCapabilities":\${deep}}}\`
    : JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 1, agentCapabilities: {}, authMethods: [] } }));
  else if (m.method === "session/new") send(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { sessionId: "deep_session" } }));
  else if (m.method === "session/prompt") send(\`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"deep_session","update":{"sessionUpdate":"session_info_update","_meta":\${deep}}}}\`);
}).on("close", () => process.exit(0));
`,
  );
  return path;
}

const EMOJI = "😀";
/** `n - 1` units of text, then an emoji whose first half is unit `n`. */
const cut = (n: number) => `${"x".repeat(n - 1)}${EMOJI}`;

/**
 * An ACP test agent scenario (a file for test-agent-process) whose texts put an emoji across
 * every cut point the projection has: a tool's title, a plan step, a notice, an extension's
 * method name, the run result's summary and the answer item's text.
 */
export function writeEmojiScenario(dir: string): string {
  const update = (u: Record<string, unknown>) => ({
    kind: "raw",
    message: { jsonrpc: "2.0", method: "session/update", params: { sessionId: "acp_test_session_1", update: u } },
  });
  const scenario = {
    schema: "prp_kit.acp_test_agent.scenario.v1",
    name: "emoji-cuts",
    description: "an emoji across each cut point",
    steps: [
      update({ sessionUpdate: "tool_call", toolCallId: "call_1", title: cut(4000), kind: "read", status: "pending" }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "call_1", status: "completed" }),
      update({ sessionUpdate: "plan", entries: [{ content: cut(4000), priority: "high", status: "pending" }] }),
      update({ sessionUpdate: "notice", severity: "info", title: cut(4000) }),
      { kind: "raw", message: { jsonrpc: "2.0", method: `_vendor/${cut(160 - "_vendor/".length)}`, params: {} } },
      // The answer: an emoji across the run result's 12,000-unit summary cut and, 65,536 units in, the item's text cut.
      update({
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: `${cut(12_000)}${"x".repeat(20_000)}` },
      }),
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: cut(65_536 - 32_001) } }),
    ],
  };
  const path = join(dir, "emoji-cuts.json");
  writeFileSync(path, JSON.stringify(scenario));
  return path;
}

/**
 * The emoji scenario's record, judged: the run succeeded, no event was refused, and each text
 * was cut before its emoji, not inside it.
 */
export function judgeEmojiCuts(events: readonly PrpEvent[]): void {
  const of = (t: string) => events.filter((e) => e.eventType === t).map((e) => e.payload as Record<string, any>);
  const terminal = of("run.terminal").at(-1);
  assert.equal(terminal?.runTerminalState, "succeeded", JSON.stringify(terminal));
  assert.deepEqual(
    of("runner.diagnostic").map((p) => p.code),
    [],
    "no event refused",
  );
  const texts: string[] = [
    of("tool.execution.started")[0]!.name,
    of("plan.updated")[0]!.steps[0].body,
    of("provider.notice.recorded")[0]!.summary,
    of("run.result.proposed")[0]!.summary,
    of("item.completed").at(-1)!.text,
  ];
  assert.deepEqual(
    texts.map((t) => t.length),
    [3999, 3999, 3999, 11_999, 65_535],
    "each text cut before the emoji, not inside it",
  );
  assert.ok(of("harness.diagnostic").some((p) => p.code === "acp_extension_ignored"));
}
