import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { mountPlan } from "../../src/harness/sandbox/mount-plan.js";
import { SupervisedProcess } from "../../src/harness/supervisor.js";
import type { SandboxPaths } from "../../src/harness/sandbox/sandbox-policy.js";
import { argvOf, liveProcesses } from "../../src/harness/live-processes.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { until } from "../support/until.js";
import { within } from "../support/within.js";

/** Live processes whose argv carries `token`, read from /proc: the kernel's record, not the runner's. */
const carrying = (token: string) =>
  liveProcesses()
    .filter((p) => argvOf(p.pid).some((a) => a.includes(token)))
    .map((p) => p.pid);
/** A command line whose argv carries a token: `sh -c 'sleep 300; : TOKEN'` waits in sleep and keeps the token in sh's argv. */
const escapee = (token: string) => `setsid sh -c '${escapeeScript(token)}' </dev/null >/dev/null 2>&1 &`;
const escapeeScript = (token: string) => `sleep 300; : ${token}`;
/**
 * The escapee itself, not the launcher or PID 1 whose argv also carry the token: those exist from
 * the spawn on, before the supervisor arms its orphan guard, so seeing them proves nothing is guarded yet.
 */
const escaped = (token: string) =>
  liveProcesses()
    .filter((p) => argvOf(p.pid)[2] === escapeeScript(token))
    .map((p) => p.pid);
const killAll = (pids: number[]) =>
  pids.forEach((pid) => {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  });

/** Runs `script` under /bin/sh in the sandbox with `view`; its stdout lines and exit. */
async function sandboxed(script: string, view: SandboxPaths, cwd: string, env: Record<string, string> = {}) {
  const lines: string[] = [];
  const h = new SupervisedProcess({
    command: "/bin/sh",
    args: ["-c", script],
    cwd,
    env,
    sandbox: view,
    onLine: (l) => lines.push(l),
    onOversize: () => {},
  });
  const exit = await h.exited;
  await h.stdoutEnded;
  await h.terminate();
  return { lines, exit, log: h.log.snapshot().lines };
}

describe("the harness sandbox", () => {
  let dir: string;
  let work: string;
  let secret: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-sandbox-"));
    work = join(dir, "work");
    secret = join(dir, "work", "state");
    mkdirSync(secret, { recursive: true });
    writeFileSync(join(secret, "authority-server-key"), "k".repeat(64));
    writeFileSync(join(dir, "outside"), "outside the view");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("shows the workspace writable, the system read-only, a fresh /tmp, and never a hidden folder inside the workspace", async () => {
    // A file in the host's /tmp that the harness must not see, and a name it writes in its own.
    const name = `prp-sandbox-tmp-${randomBytes(6).toString("hex")}`;
    const hostTmp = join(tmpdir(), name);
    writeFileSync(hostTmp, "the host's");
    try {
      await viewChecks(hostTmp, name);
    } finally {
      rmSync(hostTmp, { force: true });
    }
  });

  /** What the harness sees, from the harness and from the host. */
  const viewChecks = async (hostTmp: string, name: string) => {
    const r = await sandboxed(
      [
        "echo written > note && echo workspace-writable",
        "cat state/authority-server-key 2>/dev/null && echo KEY-READ || echo key-absent",
        "ls -A state | wc -l | sed 's/^/hidden-entries /'",
        "touch state/planted 2>/dev/null && echo PLANTED || echo hidden-read-only",
        `cat ${join(dir, "outside")} 2>/dev/null || echo outside-absent`,
        "touch /usr/planted 2>/dev/null && echo USR-WRITTEN || echo usr-read-only",
        "touch /planted 2>/dev/null && echo ROOT-WRITTEN || echo root-read-only",
        `cat ${hostTmp} 2>/dev/null || echo host-tmp-absent`,
        `echo mine > /tmp/${name} && echo tmp-writable`,
      ].join("; "),
      { readable: [], writable: [work], hidden: [secret] },
      work,
    );
    assert.deepEqual(
      r.lines,
      [
        "workspace-writable",
        "key-absent",
        "hidden-entries 0",
        "hidden-read-only",
        "outside-absent",
        "usr-read-only",
        "root-read-only",
        "host-tmp-absent",
        "tmp-writable",
      ],
      r.log.join("\n"),
    );
    assert.equal(
      readFileSync(hostTmp, "utf8"),
      "the host's",
      "the harness's /tmp is its own: the host's file is untouched",
    );
    assert.equal(readFileSync(join(work, "note"), "utf8"), "written\n", "the write reached the host's workspace");
    assert.equal(
      readFileSync(join(secret, "authority-server-key"), "utf8"),
      "k".repeat(64),
      "the hidden key is untouched on the host",
    );
  };

  it("shows the harness no process outside its namespace, and its PID 1 neither its memory nor its environment", async () => {
    const r = await sandboxed(
      [
        // Every pid the harness can name is its own namespace's: PID 1 (the init), its shell and the readers.
        "ls /proc | grep -c '^[0-9]' | sed 's/^/pids /'",
        "cat /proc/1/environ >/dev/null 2>&1 && echo ENVIRON-READ || echo environ-refused",
        "head -c 1 /proc/1/mem >/dev/null 2>&1 && echo MEM-READ || echo mem-refused",
        "readlink /proc/1/fd/1 >/dev/null 2>&1 && echo FD-OPENED || echo fds-refused",
        `echo "ppid $PPID"`,
      ].join("; "),
      { readable: [], writable: [work], hidden: [] },
      work,
    );
    const pids = Number(r.lines[0]!.split(" ")[1]);
    assert.ok(pids <= 6, `only the namespace's own processes are visible (${r.lines[0]})`);
    assert.deepEqual(r.lines.slice(1), ["environ-refused", "mem-refused", "fds-refused", "ppid 1"], r.log.join("\n"));
  });

  it("reports the harness's own exit: a code, or the signal that killed it", async () => {
    assert.deepEqual((await sandboxed("exit 3", { readable: [], writable: [work], hidden: [] }, work)).exit, {
      exitCode: 3,
      signal: null,
      success: false,
    });
    assert.deepEqual((await sandboxed("kill -s TERM $$", { readable: [], writable: [work], hidden: [] }, work)).exit, {
      exitCode: null,
      signal: "SIGTERM",
      success: false,
    });
    // The harness cannot write PID 1's status descriptor: it is closed before the harness starts.
    const forged = await sandboxed(
      `echo '{"exitCode":0,"signal":null}' >&3 2>/dev/null; exit 7`,
      { readable: [], writable: [work], hidden: [] },
      work,
    );
    assert.deepEqual(forged.exit, { exitCode: 7, signal: null, success: false });
  });

  it("passes the environment it is given and nothing else, HOME included", async () => {
    const home = join(dir, "home");
    mkdirSync(home, { recursive: true });
    const r = await sandboxed(
      "echo \"$HOME\"; echo ok > \"$HOME/.agent-login\"; env | cut -d= -f1 | sort | tr '\\n' ' '",
      { readable: [], writable: [work, home], hidden: [] },
      work,
      { HOME: home },
    );
    assert.equal(r.lines[0], home);
    assert.equal(readFileSync(join(home, ".agent-login"), "utf8"), "ok\n");
    assert.deepEqual(
      r.lines[1]!.trim()
        .split(" ")
        .filter((k) => !["PWD", "SHLVL", "_"].includes(k)),
      ["HOME", "PATH"],
    );
  });

  it("gives the harness its stdin, and no other process holds its stdout: a harness that closes it is seen to while it runs", async () => {
    const lines: string[] = [];
    const h = new SupervisedProcess({
      command: "/bin/sh",
      args: ["-c", 'read -r line; echo "got $line"; exec 1>&-; exec sleep 300'],
      cwd: work,
      sandbox: { readable: [], writable: [work], hidden: [] },
      onLine: (l) => lines.push(l),
      onOversize: () => {},
    });
    try {
      h.writeLine("hello");
      let exited = false;
      void h.exited.then(() => (exited = true));
      await within(h.stdoutEnded, 10_000, "the harness's stdout ends while it sleeps");
      assert.deepEqual(lines, ["got hello"]);
      assert.equal(exited, false, "the harness is still running when its stdout ends");
    } finally {
      await h.terminate();
    }
  });

  it("ends a setsid descendant with the harness", async () => {
    const token = `prp-escapee-${randomBytes(6).toString("hex")}`;
    const h = new SupervisedProcess({
      command: "/bin/sh",
      args: ["-c", `${escapee(token)} echo up; exec sleep 300`],
      cwd: work,
      sandbox: { readable: [], writable: [work], hidden: [] },
      onLine: () => {},
      onOversize: () => {},
    });
    try {
      await until(() => escaped(token).length > 0, `the escapee ${token} is running`);
      await h.terminate();
      await until(
        () => carrying(token).length === 0,
        () => `no process carries ${token} once the harness is ended (live: ${carrying(token).join(", ")})`,
      );
    } finally {
      killAll(carrying(token));
      await h.terminate();
    }
  });

  it("ends a setsid descendant when the runner that owns the harness is SIGKILLed", async () => {
    const token = `prp-escapee-${randomBytes(6).toString("hex")}`;
    const owner = join(dir, "owner.mjs");
    const supervisor = join(packageRoot(), "dist/src/harness/supervisor.js");
    writeFileSync(
      owner,
      [
        `import { SupervisedProcess } from ${JSON.stringify(supervisor)};`,
        `new SupervisedProcess({ command: "/bin/sh", args: ["-c", ${JSON.stringify(`${escapee(token)} exec sleep 300`)}], cwd: ${JSON.stringify(work)},`,
        `  sandbox: { readable: [], writable: [${JSON.stringify(work)}], hidden: [] }, onLine: () => {}, onOversize: () => {} });`,
        "setInterval(() => {}, 1000);",
      ].join("\n"),
    );
    const runner = spawn(process.execPath, [owner], { stdio: "ignore" });
    try {
      await until(() => escaped(token).length > 0, `the escapee ${token} is running`);
      runner.kill("SIGKILL");
      await until(
        () => carrying(token).length === 0,
        () => `no process carries ${token} after its runner's SIGKILL (live: ${carrying(token).join(", ")})`,
      );
    } finally {
      runner.kill("SIGKILL");
      killAll(carrying(token));
    }
  });
});

describe("the sandbox's mount plan", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-mount-plan-"));
    mkdirSync(join(dir, "real", "inner"), { recursive: true });
    symlinkSync(join(dir, "real"), join(dir, "link"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("binds parents before children, hides last at a depth, recreates links, and leaves out what does not exist or is already shown", () => {
    const plan = mountPlan({
      readable: [join(dir, "real", "inner"), join(dir, "missing")],
      writable: [join(dir, "link")],
      hidden: [join(dir, "real", "inner"), join(dir, "gone")],
    });
    const mine = plan.filter((o) => o.path.startsWith(dir));
    assert.deepEqual(mine, [
      { op: "link", path: join(dir, "link"), target: join(dir, "real") },
      { op: "rw", path: join(dir, "real") },
      { op: "ro", path: join(dir, "real", "inner") },
      { op: "hide", path: join(dir, "real", "inner") },
    ]);
    assert.ok(
      plan.some((o) => o.op === "ro" && o.path === "/usr"),
      "the system's folders are read-only",
    );
    assert.ok(
      !plan.some((o) => o.op === "ro" && o.path.startsWith("/usr/")),
      "nothing already inside /usr is bound again",
    );
  });
});
