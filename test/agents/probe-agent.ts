import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/**
 * A hand-written ACP agent for `prp agents check`, hostile or broken as its one argument says.
 * It answers only `initialize`, on purpose without the SDK: it writes what no SDK agent would.
 *
 *   answer       a correct answer that advertises one auth method
 *   garbage      lines that are not JSON, an escape sequence and a 200 KB line, then the answer
 *   silent       never answers, ignores SIGTERM, and leaves a child of its own in the group
 *   exit         exits 7 at once, with credential-shaped stderr and PRP_TEST_TOKEN echoed bare
 *   version99    answers with ACP protocol version 99
 *   error        answers with a JSON-RPC error
 *   invalid      a response with neither result nor error: the SDK refuses it
 *   not-object   a result that is a string
 */
const mode = process.argv[2];

const answer = (id: unknown, result: unknown) =>
  process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id, result })}\n`);
const initializeResult = (protocolVersion: number) => ({
  protocolVersion,
  agentCapabilities: { loadSession: false, promptCapabilities: { image: false } },
  agentInfo: { name: "probe-agent", title: "\u001b[2J\u001b]0;pwned\u0007Probe", version: "1.0.0" },
  authMethods: [{ id: "token", name: "PRP test token" }],
});

if (mode === "exit") {
  process.stderr.write(
    "starting\nANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnop\nAuthorization: Bearer abc.def.ghi\n",
  );
  process.stderr.write(`token ${process.env.PRP_TEST_TOKEN ?? "none"}\nfatal: cannot start\n`);
  process.exit(7);
}
if (mode === "silent") {
  process.on("SIGTERM", () => {});
  spawn("sleep", ["300"], { stdio: "ignore" });
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const { id } = JSON.parse(line) as { id: unknown };
  switch (mode) {
    case "answer":
      return answer(id, initializeResult(1));
    case "garbage":
      process.stdout.write('not json at all\n\u001b[31mred\u001b[0m\n{"half": \n');
      process.stdout.write(`${"x".repeat(200_000)}\n`);
      return answer(id, initializeResult(1));
    case "version99":
      return answer(id, initializeResult(99));
    case "error":
      return process.stdout.write(
        `${JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32603, message: "boom: api_key=sk-secretsecretsecret" } })}\n`,
      );
    case "invalid":
      return process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id })}\n`);
    case "not-object":
      return answer(id, "hello");
    default:
      return undefined; // silent
  }
});
