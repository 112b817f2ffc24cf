/**
 * A deterministic ACP agent for tests and demos, built on the official SDK:
 * `node test-agent-process.js --scenario NAME|FILE [--session-dir DIR]`. It speaks ACP over its
 * stdio like a real agent (initialize, session/new, session/load, session/close,
 * session/prompt, session/cancel) and plays its scenario's steps inside each prompt. With
 * --session-dir its sessions outlive the process (see session-store), so another agent
 * process can load one; without it, it knows only the sessions it made itself.
 */
import { existsSync, writeFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import * as acp from "@agentclientprotocol/sdk";
import { loadAgentScenario, resolveAgentScenario, type AgentScenario, type AgentStep } from "./test-agent-scenario.js";
import { TestAgentSessions } from "./test-agent-sessions.js";

const CANCEL_WAIT_MS = 60_000;

function fromArgs(): { scenario: AgentScenario; sessionDir: string | undefined } {
  try {
    const { values } = parseArgs({ options: { scenario: { type: "string" }, "session-dir": { type: "string" } } });
    if (!values.scenario) throw new Error("--scenario is required");
    return { scenario: loadAgentScenario(resolveAgentScenario(values.scenario)), sessionDir: values["session-dir"] };
  } catch (err) {
    process.stderr.write(
      `acp test agent: ${(err as Error).message}\nusage: test-agent-process.js --scenario NAME|FILE [--session-dir DIR]\n`,
    );
    process.exit(2);
  }
}

const { scenario, sessionDir } = fromArgs();
const sessions = new TestAgentSessions(sessionDir);
/** The session the agent works in: the one session/new made or session/load loaded. */
let sessionId = "";
/** Every write, the SDK's and the raw ones, goes through here in order. */
const writeOut = (bytes: Uint8Array | string) =>
  new Promise<void>((resolve) => process.stdout.write(bytes, () => resolve()));
const output = new WritableStream<Uint8Array>({ write: (chunk) => writeOut(chunk) });
let cancelled = false;
/** The text of the prompt being answered (the echo step says it back). */
let promptText = "";
/** Whether the client said, at initialize, that it can show form questions. */
let formsOffered = false;
let wakeOnCancel: (() => void) | null = null;
/** The mode and model the client selected (session/set_mode, session/set_model or a model config option). */
const selected: { mode: string | null; model: string | null } = { mode: null, model: null };

/** Scenario paths are relative; ACP paths are absolute: they are taken from the agent's cwd. */
function inCwd(update: Record<string, unknown>): Record<string, unknown> {
  const fix = (list: unknown) =>
    Array.isArray(list)
      ? list.map((x) =>
          x && typeof x.path === "string" && !isAbsolute(x.path) ? { ...x, path: join(process.cwd(), x.path) } : x,
        )
      : list;
  return {
    ...update,
    ...("locations" in update ? { locations: fix(update.locations) } : {}),
    ...("content" in update ? { content: fix(update.content) } : {}),
  };
}

async function play(step: AgentStep, client: acp.AgentContext): Promise<acp.StopReason | undefined> {
  const update = (u: Record<string, unknown>) => {
    sessions.record(sessionId, u);
    return client.notify(acp.methods.client.session.update, { sessionId, update: u as acp.SessionUpdate });
  };
  switch (step.kind) {
    case "update":
      await update(inCwd(step.update));
      return undefined;
    case "chunks":
      for (let i = 0; i < step.count; i++)
        await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: step.text } });
      return undefined;
    case "raw":
      await writeOut(`${JSON.stringify(step.message)}\n`);
      return undefined;
    case "permission": {
      const answer = await client.request(acp.methods.client.session.requestPermission, {
        sessionId,
        toolCall: step.toolCall as acp.ToolCallUpdate,
        options: step.options as acp.PermissionOption[],
      });
      const toolCallId = step.toolCall.toolCallId;
      if (answer.outcome.outcome === "cancelled") return "cancelled";
      const chosen = step.options.find((o) => o.optionId === (answer.outcome as { optionId: string }).optionId);
      const allowed = chosen?.kind.startsWith("allow") === true;
      await update({ sessionUpdate: "tool_call_update", toolCallId, status: allowed ? "completed" : "failed" });
      await update({
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: `permission outcome: ${chosen?.optionId ?? "unknown option"}` },
      });
      return undefined;
    }
    case "question": {
      if (!formsOffered)
        throw new acp.RequestError(-32603, "the client does not offer form elicitation, so the agent cannot ask");
      const answer = await client.request(acp.methods.client.elicitation.create, {
        sessionId,
        mode: "form",
        message: step.message,
        requestedSchema: step.requestedSchema as acp.ElicitationSchema,
      });
      const content = "content" in answer && answer.content ? ` ${JSON.stringify(answer.content)}` : "";
      await update({
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: `question answer: ${answer.action}${content}` },
      });
      return undefined;
    }
    case "await_cancel":
      if (!cancelled) await Promise.race([new Promise<void>((r) => (wakeOnCancel = r)), sleep(CANCEL_WAIT_MS)]);
      if (!cancelled) throw new acp.RequestError(-32603, `no session/cancel within ${CANCEL_WAIT_MS} ms`);
      return "cancelled";
    case "error":
      throw new acp.RequestError(step.code, step.message);
    case "crash":
      return process.exit(step.code);
    case "crash_once": {
      const marker = join(process.cwd(), step.marker);
      if (existsSync(marker)) return undefined;
      writeFileSync(marker, "crashed once\n");
      process.kill(process.pid, "SIGKILL");
      return undefined;
    }
    case "stderr":
      process.stderr.write(`${step.text}\n`);
      return undefined;
    case "delay":
      await sleep(step.ms);
      return undefined;
    case "echo":
      await update({
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: `you said: ${promptText}` },
      });
      return undefined;
  }
}

const app = acp
  .agent({ name: "prp-kit-acp-test-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    formsOffered = params.clientCapabilities?.elicitation?.form != null;
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: scenario.capabilities?.loadSession === true,
        ...(scenario.capabilities?.close ? { sessionCapabilities: { close: {} } } : {}),
        ...scenario.capabilityExtras,
      },
      agentInfo: { name: "prp-kit-acp-test-agent", title: `test agent: ${scenario.name}`, version: "1.0.0" },
      authMethods: [],
      ...scenario.initializeExtras,
    } as acp.InitializeResponse;
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    sessionId = sessions.create(params.cwd);
    return { ...scenario.sessionExtras, sessionId } as acp.NewSessionResponse;
  })
  .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
    const history = sessions.history(params.sessionId);
    if (!history)
      throw new acp.RequestError(
        -32002,
        `no session ${params.sessionId} here${sessionDir ? ` or in ${sessionDir}` : " (this agent keeps no sessions: --session-dir)"}`,
      );
    sessionId = params.sessionId;
    // ACP: the agent replays the whole conversation as session/update notifications, then answers.
    for (const update of history)
      await client.notify(acp.methods.client.session.update, { sessionId, update: update as acp.SessionUpdate });
    return {};
  })
  .onRequest(acp.methods.agent.session.close, () => ({}))
  .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
    selected.mode = params.modeId;
    return {};
  })
  .onRequest(acp.methods.agent.session.setConfigOption, ({ params }) => {
    if ("value" in params && typeof params.value === "string") selected.model = params.value;
    return { configOptions: [] };
  })
  // ACP's unstable session/set_model, which the SDK does not name.
  .onRequest(
    "session/set_model",
    (params) => params as { modelId?: unknown },
    ({ params }) => {
      if (typeof params.modelId === "string") selected.model = params.modelId;
      return {};
    },
  )
  .onNotification(acp.methods.agent.session.cancel, () => {
    cancelled = true;
    wakeOnCancel?.();
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    cancelled = false;
    promptText = params.prompt.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join("");
    if (selected.mode !== null || selected.model !== null)
      await play(
        {
          kind: "update",
          update: {
            sessionUpdate: "agent_message_chunk",
            content: { type: "text", text: `mode ${selected.mode ?? "unset"}, model ${selected.model ?? "unset"}. ` },
          },
        },
        client,
      );
    for (const step of scenario.steps) {
      const stop = await play(step, client);
      if (stop) return { stopReason: stop };
      if (cancelled) return { stopReason: "cancelled" as const };
    }
    return { stopReason: scenario.stopReason ?? "end_turn" };
  });

const connection = app.connect(acp.ndJsonStream(output, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
await connection.closed;
if (scenario.lingerAfterEof) setInterval(() => {}, 60_000);
else process.exit(0);
