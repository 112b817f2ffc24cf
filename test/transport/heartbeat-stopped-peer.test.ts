import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { afterEach, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { until } from "../support/until.js";
import { MemoryAuthority, TestServer } from "./support.js";

const CHILD = fileURLToPath(new URL("./pong-runner-child.js", import.meta.url));
/** Real time: long enough that a loaded machine does not starve a running child past 3 beats. */
const INTERVAL_MS = 500;

/**
 * A runner process that is stopped (SIGSTOP) keeps its TCP connection: the kernel still
 * acknowledges, nothing closes. Only the heartbeat can notice it. The authority and the runner
 * are real, each in its own process, on real time; every wait is bounded by a condition.
 */
describe("heartbeat: a stopped runner process (runtime.md §5.3 step 8)", () => {
  const children: ChildProcess[] = [];
  const servers: TestServer[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill("SIGCONT");
      child.kill("SIGKILL");
    }
    for (const s of servers.splice(0)) await s.close();
  });

  async function connected() {
    const authority = new MemoryAuthority();
    const core = await new TestServer(authority, { heartbeat: {}, heartbeatIntervalMs: INTERVAL_MS }).start();
    servers.push(core);
    const child = spawn(process.execPath, [CHILD, core.url, authority.issueBootstrap()], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let out = "";
    let err = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    await until(
      () => out.includes("connected\n"),
      () => `the runner child to connect (stderr: ${err})`,
    );
    const pongs = () => core.pongs; // the WebSocket pongs the authority's socket received
    return { child, pongs, closed: () => core.inbox.closed };
  }

  it("is closed as peer_silent once it missed 3 beats, while its socket stays open", async () => {
    const { child, pongs, closed } = await connected();
    await until(() => pongs() >= 2, "two answered beats");
    assert.ok(child.kill("SIGSTOP"));
    const answered = pongs();
    await until(() => closed() !== undefined, "the authority to notice the stopped runner");
    assert.equal(closed()?.code, "peer_silent");
    assert.match(closed()?.message ?? "", /the limit is 1500 ms/);
    assert.ok(pongs() <= answered + 1, "at most a pong already in flight arrived after the stop");
    assert.equal(child.exitCode, null, "the runner process was alive all along, only stopped");
  });

  it("must-fail control: a running runner answers past 3 beats and is never closed", async () => {
    const { pongs, closed } = await connected();
    await until(() => pongs() >= 8 || closed() !== undefined, "8 answered beats");
    assert.equal(closed(), undefined, "a runner that answers every beat is not taken for dead");
  });
});
