import { spawn } from "node:child_process";

/** What one npm command did: its exit and the end of what it wrote (npm's own output is shown only on failure). */
export type NpmRun =
  { started: false; reason: string } | { started: true; code: number; signal: string | null; output: string };

/** Enough of npm's output to hold its error block; the rest of a long install log is dropped. */
const KEPT_OUTPUT_BYTES = 64 * 1024;

/** Runs `npm ARGS` in `cwd`; `started: false` when there is no npm to run (not on PATH). */
export function runNpm(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<NpmRun> {
  return new Promise((resolve) => {
    const child = spawn("npm", args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const keep = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (output.length > 2 * KEPT_OUTPUT_BYTES) output = output.slice(-KEPT_OUTPUT_BYTES);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.on("error", (e: NodeJS.ErrnoException) =>
      resolve({ started: false, reason: e.code === "ENOENT" ? "npm is not on PATH" : e.message }),
    );
    child.on("close", (code, signal) =>
      resolve({ started: true, code: code ?? 1, signal, output: output.slice(-KEPT_OUTPUT_BYTES) }),
    );
  });
}

/** Lines of npm's output that say why it failed, the noise left out. */
const tail = (output: string, lines: number): string =>
  output
    .split("\n")
    .map((l) => l.trimEnd())
    .filter((l) => l !== "" && !/^npm error (404|notarget)?\s*$/.test(l))
    .slice(-lines)
    .join("\n");

/**
 * Why an `npm install` of `spec` failed, from npm's own error code: a version or package the
 * registry does not have, a package not in the cache under --offline, or else npm's last lines.
 */
export function npmFailureCause(output: string, spec: string, offline: boolean): string {
  const code = /^npm error code (\S+)/m.exec(output)?.[1];
  if (code === "ETARGET") {
    const missing = /No matching version found for (\S+?)\.?$/m.exec(output)?.[1] ?? spec;
    return `${missing} does not exist in the registry (npm: ETARGET)`;
  }
  if (code === "E404") {
    const missing = /requested resource '([^']+)' could not be found/.exec(output)?.[1] ?? spec;
    return `${missing} does not exist in the registry (npm: E404)`;
  }
  if (code === "ENOTCACHED")
    return offline
      ? `${spec} is not in npm's cache and --offline was given: install it once without --offline`
      : `${spec} is not in npm's cache and npm is configured offline (npm: ENOTCACHED)`;
  return `npm said:\n${tail(output, 12)}`;
}
