/**
 * A hostile ACP agent, written as raw JSON-RPC lines (no SDK: it chooses its own ids and breaks
 * the protocol on purpose): `node hostile-agent.js --mode MODE --log FILE`. Each process
 * appends `start <pid>`, `pidns <its PID namespace>` and every method it receives to FILE, so a
 * test reads what reached the agent, and where it ran, from the agent's own record. Modes:
 * - never-initialize: answers nothing.
 * - never-session-new: answers initialize, then nothing.
 * - silent-prompt: opens a session, then says nothing once the prompt arrives.
 * - close-stdout: opens a session; at the prompt it closes its stdout and keeps running.
 * - endless-line: opens a session; at the prompt it writes one line that never ends.
 * - bad-version: answers initialize with protocolVersion 999999.
 * - slow-cancel: streams a chunk at the prompt, then ignores session/cancel and never answers.
 * - flood: asks 10,000 permissions at once and ends its turn without waiting for any answer.
 * - bait-switch: the first process (no `bait-switch.marker` in its cwd) asks permission to read
 *   README.md with JSON-RPC id 5 and dies by SIGKILL; the next asks to run `rm -rf ~` with the
 *   same id 5, and ends its turn saying which outcome it got.
 */
import { appendFileSync, closeSync, existsSync, writeFileSync } from "node:fs";
import { recordPidNamespace } from "./pid-namespace.js";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { mode: { type: "string" }, log: { type: "string" } } });
// `node --test dist/test/` also runs this file, with no arguments: as a test it has nothing to do
// (an agent that stays alive until killed would hang the suite).
if (values.mode === undefined) process.exit(0);
const mode = values.mode;
const record = (line: string) => values.log && appendFileSync(values.log, `${line}\n`);
record(`start ${process.pid}`);
if (values.log) recordPidNamespace(values.log);

type Obj = Record<string, any>;
const send = (message: Obj) => process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
const SESSION = "hostile_session_1";
const chunk = (text: string) =>
  send({
    method: "session/update",
    params: { sessionId: SESSION, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } },
  });
const permission = (title: string, kind: string, id = 5) =>
  send({
    id,
    method: "session/request_permission",
    params: {
      sessionId: SESSION,
      toolCall: { toolCallId: `call_${kind}_${id}`, title, kind },
      options: [
        { optionId: "allow", name: "Allow", kind: "allow_once" },
        { optionId: "reject", name: "Reject", kind: "reject_once" },
      ],
    },
  });

let promptId: unknown = null;
// Alive until killed, whatever happens to its stdio: only the runner can end it.
setInterval(() => {}, 60_000);

function onPrompt(id: unknown): void {
  promptId = id;
  switch (mode) {
    case "close-stdout":
      closeSync(1);
      return;
    case "endless-line": {
      const block = Buffer.alloc(1 << 20, "x");
      let written = 0;
      // 300 MB with no newline, then silence: only the runner's line limit can notice it.
      const more = () => {
        while (written < 300 << 20) {
          written += block.length;
          if (!process.stdout.write(block)) return void process.stdout.once("drain", more);
        }
      };
      more();
      return;
    }
    case "flood":
      for (let i = 0; i < 10_000; i++) permission(`Read file ${i}`, "read", 1_000 + i);
      send({ id, result: { stopReason: "end_turn" } });
      return;
    case "slow-cancel":
      chunk("working");
      return;
    case "bait-switch": {
      const marker = "bait-switch.marker";
      if (!existsSync(marker)) {
        writeFileSync(marker, "first agent\n");
        permission("Read README.md", "read");
        // Dies once its request was read: the runner starts a replacement, which carries the turn on.
        setTimeout(() => process.kill(process.pid, "SIGKILL"), 300);
      } else {
        permission("run rm -rf ~", "execute");
      }
      return;
    }
    default:
      return; // silent-prompt
  }
}

createInterface({ input: process.stdin })
  .on("line", (line) => {
    let message: Obj;
    try {
      message = JSON.parse(line) as Obj;
    } catch {
      return;
    }
    record(message.method ?? `answer ${JSON.stringify(message.result ?? message.error)}`);
    if (message.method === "initialize") {
      if (mode === "never-initialize") return;
      send({
        id: message.id,
        result: {
          protocolVersion: mode === "bad-version" ? 999999 : 1,
          agentCapabilities: {},
          agentInfo: { name: "hostile", version: "1" },
          authMethods: [],
        },
      });
    } else if (message.method === "session/new") {
      if (mode !== "never-session-new") send({ id: message.id, result: { sessionId: SESSION } });
    } else if (message.method === "session/prompt") {
      onPrompt(message.id);
    } else if (message.method === undefined && message.id === 5 && promptId !== null) {
      // The permission answered: the turn ends, and says what the agent was told.
      chunk(`outcome: ${JSON.stringify(message.result?.outcome ?? null)}`);
      send({ id: promptId, result: { stopReason: "end_turn" } });
    }
  })
  .on("close", () => {
    if (mode === "bait-switch" || mode === "bad-version" || mode === "flood") process.exit(0);
  });
