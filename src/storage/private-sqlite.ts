import { closeSync, existsSync, fstatSync, lstatSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";

/** A refusal to open durable state: what is wrong and with which path. */
export class StateError extends Error {
  constructor(
    readonly code: string,
    readonly path: string,
    message: string,
  ) {
    super(`${code}: ${path}: ${message}`);
    this.name = "StateError";
  }
}

export const ownerOnly = (mode: number) => (mode & 0o077) === 0;
export const uid = () => (typeof process.getuid === "function" ? process.getuid() : -1);

/** The state directory: created 0700, or refused when it is a symlink, foreign-owned or open to others. */
function checkDirectory(dir: string): void {
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) throw new StateError("state_symlink", dir, "the state directory is a symbolic link");
  if (!st.isDirectory()) throw new StateError("state_not_directory", dir, "the state path is not a directory");
  if (st.uid !== uid())
    throw new StateError("state_wrong_owner", dir, `the state directory belongs to uid ${st.uid}, not ${uid()}`);
  if (!ownerOnly(st.mode))
    throw new StateError(
      "state_wrong_mode",
      dir,
      `the state directory has mode ${(st.mode & 0o777).toString(8)}; it must be 700`,
    );
}

/** An existing database file (or its -wal/-shm) must be a private regular file of ours. */
function checkFile(path: string): void {
  if (!existsSync(path)) return;
  const st = lstatSync(path);
  if (st.isSymbolicLink()) throw new StateError("state_symlink", path, "the state file is a symbolic link");
  if (!st.isFile()) throw new StateError("state_not_file", path, "the state path is not a regular file");
  if (st.uid !== uid())
    throw new StateError("state_wrong_owner", path, `the state file belongs to uid ${st.uid}, not ${uid()}`);
  if (!ownerOnly(st.mode))
    throw new StateError(
      "state_wrong_mode",
      path,
      `the state file has mode ${(st.mode & 0o777).toString(8)}; it must be 600`,
    );
}

export interface PrivateDatabaseOptions {
  /** Refuse a main file larger than this many bytes (the state size bound). */
  maxFileBytes: number;
}

/**
 * Opens a SQLite database for durable state (runtime.md §5.7, D7): a private directory (0700)
 * and private files (0600, created under umask 077, symlinks refused), WAL journal with
 * synchronous=FULL, so that a committed transaction survives a crash or power loss.
 */
export function openPrivateDatabase(path: string, options: PrivateDatabaseOptions): Database.Database {
  checkDirectory(dirname(path));
  for (const suffix of ["", "-wal", "-shm"]) checkFile(`${path}${suffix}`);
  if (existsSync(path)) {
    const fd = openSync(path, "r");
    const size = fstatSync(fd).size;
    closeSync(fd);
    if (size > options.maxFileBytes)
      throw new StateError(
        "state_too_large",
        path,
        `the state file is ${size} bytes; the bound is ${options.maxFileBytes}`,
      );
  }
  const previous = process.umask(0o077); // the database, WAL and SHM files are created 0600
  try {
    const db = new Database(path);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.pragma("foreign_keys = ON");
    for (const suffix of ["", "-wal", "-shm"]) checkFile(`${path}${suffix}`);
    return db;
  } finally {
    process.umask(previous);
  }
}

/**
 * A statement prepared once per SQL text: the durable stores run the same few small statements
 * for every event, and preparing them costs more than running them.
 */
export function statementCache(db: Database.Database): (text: string) => Database.Statement {
  const statements = new Map<string, Database.Statement>();
  return (text) => {
    let statement = statements.get(text);
    if (!statement) {
      statement = db.prepare(text);
      statements.set(text, statement);
    }
    return statement;
  };
}
