/*
 * PID 1 of a sandboxed harness's PID namespace (sandbox-command.ts starts it once the view is
 * built). It starts the harness in a user namespace of its own, so that the harness holds no
 * capability over the view's mounts and runs as the runner's uid, and reports how it ended on
 * descriptor 3: a PID 1 cannot die of a signal from inside its namespace, so its own exit could
 * not say "killed by SIGTERM". It then stays, as a harness's leftover workers stay in its group
 * without the sandbox, until the supervisor ends the group or the launcher dies; when it exits,
 * the kernel kills whatever else is in the namespace.
 *
 * Node rather than /bin/sh: dash cannot tell "killed by signal N" from "exited 128+N".
 */
import { spawn } from "node:child_process";
import { closeSync, writeSync } from "node:fs";
import { Socket } from "node:net";

const STATUS_FD = 3;
/** The launcher's end of this pipe closes when it dies, however: then so does the namespace. */
const LAUNCHER_FD = 4;
const [unshare, uid, gid, ...command] = process.argv.slice(2);
// The supervisor signals the harness's whole group; PID 1 outlives a signal only to report.
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"] as const) process.on(signal, () => {});
const report = (status: object) => {
  writeSync(STATUS_FD, `${JSON.stringify(status)}\n`);
  closeSync(STATUS_FD);
};
// Node leaves inherited descriptors open in a child: the shell closes the status descriptor, so
// that the harness cannot write a status of its own, and the launcher's pipe.
const child = spawn(
  "/bin/sh",
  [
    "-c",
    'exec "$@" 3>&- 4<&-',
    "prp-sandbox",
    unshare!,
    "--user",
    `--map-user=${uid}`,
    `--map-group=${gid}`,
    "--",
    ...command,
  ],
  { stdio: "inherit" },
);
// The harness alone holds its stdin and stdout from here: when it closes stdout, the runner sees it.
closeSync(0);
closeSync(1);
child.on("error", (error) => {
  report({ error: error.message });
  process.exit(125);
});
child.on("exit", (exitCode, signal) => report({ exitCode, signal }));
new Socket({ fd: LAUNCHER_FD, readable: true, writable: false })
  .on("close", () => process.exit(137))
  .on("error", () => {})
  .resume();
