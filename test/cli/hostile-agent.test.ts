import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";
import { argvOf, liveProcesses } from "../../src/harness/live-processes.js";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { until } from "../support/until.js";
import { runPrp } from "./run-cli.js";

/*
 * A hostile ACP agent, as the runner's own user: before it answers like a good agent, it leaves
 * a setsid child behind, looks for the runner in /proc and steals its stdout with pidfd_getfd
 * (python3's ctypes: Node has no such call), searches its workspace for the authority's key and
 * the runner's state, and notes what it found in its workspace. The tests judge from the host:
 * /proc after the run, the key file, the note, the run's record. `--sandbox none` is the
 * must-fail twin: there the same agent escapes, finds the runner and reads the key.
 */
const FORGER = String.raw`
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
runners, stolen = [], 0
for p in os.listdir('/proc'):
    if not p.isdigit(): continue
    try: argv = open('/proc/%s/cmdline' % p, 'rb').read()
    except Exception: continue
    if argv.split(b'\0')[1:2] and argv.split(b'\0')[1].endswith(b'prp-runnerd.js'): runners.append(int(p))
for pid in runners:
    pidfd = libc.syscall(434, pid, 0)
    fd = libc.syscall(438, pidfd, 1, 0) if pidfd >= 0 else -1
    if fd >= 0:
        stolen += 1
        os.close(fd)
print('runners %d stolen %d' % (len(runners), stolen))
`;

const HOSTILE = (token: string, search: string, agent: string) => `
setsid sh -c 'sleep 300; : ${token}' </dev/null >/dev/null 2>&1 &
{
  python3 "$PWD/forger.py" 2>&1
  key=$(find ${search} -name authority-server-key 2>/dev/null | head -n 1)
  if [ -n "$key" ] && cat "$key" >/dev/null 2>&1; then echo "key $(cat "$key")"; else echo "key absent"; fi
  if [ -n "$(find ${search} -name runner-state 2>/dev/null)" ]; then echo "state found"; else echo "state absent"; fi
  echo "home $HOME"
  echo "cwd $PWD"
} > "$PWD/report" 2>&1
exec ${agent}
`;

const carrying = (token: string) =>
  liveProcesses()
    .filter((p) => argvOf(p.pid).some((a) => a.includes(token)))
    .map((p) => p.pid);
const killAll = (pids: number[]) =>
  pids.forEach((pid) => {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  });
const report = (work: string): Record<string, string> =>
  Object.fromEntries(
    readFileSync(join(work, "report"), "utf8")
      .trim()
      .split("\n")
      .map((l) => [l.split(" ")[0]!, l.slice(l.indexOf(" ") + 1)]),
  );

describe("a hostile agent, in the sandbox and without it", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-hostile-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A workspace with the hostile agent in it; its runs' folder (--out) lies inside the workspace. */
  const workspace = (name: string, token: string) => {
    const work = join(dir, name);
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, "forger.py"), FORGER);
    writeFileSync(join(work, "hostile.sh"), HOSTILE(token, work, testAgentCommand("streamed-answer")));
    return { work, out: join(work, ".prp"), agent: `sh ${join(work, "hostile.sh")}` };
  };

  for (const mode of ["isolated", "none"] as const) {
    it(`local (prp run --sandbox ${mode})`, async () => {
      const token = `prp-escapee-${randomBytes(6).toString("hex")}`;
      const { work, out, agent } = workspace(`local-${mode}`, token);
      try {
        const run = runPrp(
          [
            "run",
            "--json",
            "--agent-command",
            agent,
            "--prompt",
            "Fix the failing test.",
            "--permission-policy",
            "deny",
            "--out",
            out,
            "--sandbox",
            mode,
          ],
          { cwd: work },
        );
        const found = report(work);
        assert.equal(found.home, process.env.HOME, "HOME reaches the agent");
        assert.equal(found.cwd, work, "the agent works where prp run was started");
        if (mode === "isolated") {
          assert.equal(run.status, 0, run.stderr);
          assert.equal(found.runners, "0 stolen 0", "the agent sees no runner, so it steals nothing");
          await until(
            () => carrying(token).length === 0,
            () => `the setsid child ${token} ended with the run (live: ${carrying(token).join(", ")})`,
          );
        } else {
          assert.match(run.stderr, /--sandbox none: the harness runs as this user/, "none says what it gives up");
          assert.match(
            found.runners!,
            /^[1-9]\d* stolen [1-9]/,
            `without the sandbox the agent takes the runner's stdout (${found.runners})`,
          );
          assert.ok(carrying(token).length > 0, "without the sandbox the setsid child outlives the run");
        }
      } finally {
        killAll(carrying(token));
      }
    });

    it(`durable (prp demo --sandbox ${mode})`, async () => {
      const token = `prp-escapee-${randomBytes(6).toString("hex")}`;
      const { work, out, agent } = workspace(`durable-${mode}`, token);
      try {
        const run = runPrp(
          [
            "demo",
            "--json",
            "--agent-command",
            agent,
            "--prompt",
            "Fix the failing test.",
            "--out",
            out,
            "--sandbox",
            mode,
          ],
          { cwd: work },
        );
        const { runId, runTerminalState } = JSON.parse(run.stdout) as { runId: string; runTerminalState: string };
        const found = report(work);
        const key = readFileSync(join(out, "demo", runId, "authority-server-key"), "utf8").trim();
        assert.equal(found.home, process.env.HOME, "HOME reaches the agent");
        assert.equal(found.cwd, work, "the agent works where prp demo was started, not in the run's folder");
        if (mode === "isolated") {
          assert.equal(run.status, 0, run.stderr);
          assert.equal(runTerminalState, "succeeded");
          assert.equal(found.key, "absent", "the authority's key is not in the agent's view");
          assert.equal(found.state, "absent", "nor is the runner's state");
          assert.equal(found.runners, "0 stolen 0");
          await until(
            () => carrying(token).length === 0,
            () => `the setsid child ${token} ended with the run (live: ${carrying(token).join(", ")})`,
          );
        } else {
          assert.equal(found.key, key, "without the sandbox the agent reads the authority's key");
          assert.equal(found.state, "found");
          assert.ok(carrying(token).length > 0, "without the sandbox the setsid child outlives the run");
        }
      } finally {
        killAll(carrying(token));
      }
    });
  }

  it("refuses to run, exit 8, where the kernel forbids the namespaces; --sandbox none runs and says what it gives up", () => {
    const out = join(dir, "refused");
    // A user namespace whose own limit forbids any nested one: the kernel then refuses the sandbox's.
    const inForbidding = (args: string[]) =>
      spawnSync(
        "unshare",
        [
          "--user",
          "--map-root-user",
          "sh",
          "-c",
          'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"',
          "sh",
          process.execPath,
          join(packageRoot(), "bin/prp.js"),
          ...args,
        ],
        { encoding: "utf8", timeout: 60_000, cwd: dir },
      );
    const refused = inForbidding(["run", "--script", "happy-path", "--delay-ms", "0", "--out", out]);
    assert.equal(refused.status, 8, refused.stderr);
    assert.match(
      refused.stderr,
      /the harness sandbox cannot be set up here: the kernel refused the namespaces.*--sandbox none runs the harness without it/,
    );
    assert.equal(readdirSync(dir).includes("refused"), false, "nothing ran");
    const unsandboxed = inForbidding([
      "run",
      "--script",
      "happy-path",
      "--delay-ms",
      "0",
      "--out",
      out,
      "--sandbox",
      "none",
    ]);
    assert.equal(unsandboxed.status, 0, unsandboxed.stderr);
    assert.match(unsandboxed.stderr, /--sandbox none: the harness runs as this user/);
  });
});
