import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { dirname } from "node:path";
import { ownerOnly, StateError, uid } from "../storage/private-sqlite.js";
import { SERVER_KEY_BYTES, ServerKey } from "./server-key.js";

/** The environment variable that may carry the server key: 64 hex digits. */
export const SERVER_KEY_ENV = "PRP_AUTHORITY_SERVER_KEY";

const MAX_KEY_FILE_BYTES = 1024;
const KEY_FORMAT = `${SERVER_KEY_BYTES * 2} hex digits (e.g. \`openssl rand -hex ${SERVER_KEY_BYTES}\`)`;

/**
 * The server key from a file: a regular file of ours, mode 600 (no group or other bits), not a
 * symlink, holding 64 hex digits. Anything else is refused (StateError `server_key_*`), never
 * read around.
 */
export function readServerKeyFile(path: string): ServerKey {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO would wait for a writer; the fstat below then refuses it.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new StateError("server_key_missing", path, "there is no server key file");
    if (code === "ELOOP") throw new StateError("server_key_symlink", path, "the server key file is a symbolic link");
    throw new StateError("server_key_unreadable", path, `the server key file cannot be opened (${code ?? "error"})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new StateError("server_key_not_file", path, "the server key path is not a regular file");
    if (st.uid !== uid())
      throw new StateError(
        "server_key_wrong_owner",
        path,
        `the server key file belongs to uid ${st.uid}, not ${uid()}`,
      );
    if (!ownerOnly(st.mode))
      throw new StateError(
        "server_key_wrong_mode",
        path,
        `the server key file has mode ${(st.mode & 0o777).toString(8)}; it must be 600 (chmod 600 ${path})`,
      );
    const buffer = Buffer.alloc(MAX_KEY_FILE_BYTES);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    const key = ServerKey.fromHex(buffer.toString("latin1", 0, length));
    buffer.fill(0);
    if (!key) throw new StateError("server_key_invalid", path, `the server key file must hold ${KEY_FORMAT}`);
    return key;
  } finally {
    closeSync(fd);
  }
}

/**
 * A new server key file: 32 random bytes as 64 hex digits, created mode 600 in a 700 directory,
 * never over an existing file (`server_key_exists`: a store sealed under the old key would no
 * longer open). Returns the key as read back.
 */
export function createServerKeyFile(path: string): ServerKey {
  if (!writeNewKeyFile(path))
    throw new StateError(
      "server_key_exists",
      path,
      "a server key file is already there; it is never overwritten (a store sealed under it would no longer open)",
    );
  return readServerKeyFile(path);
}

/**
 * The embedded demo's key, beside its state: created (as createServerKeyFile does) when
 * missing, then read as any key file is.
 */
export function ensureServerKeyFile(path: string): ServerKey {
  writeNewKeyFile(path);
  return readServerKeyFile(path);
}

/** Writes a fresh key to `path` unless something is there already; false when it was. */
function writeNewKeyFile(path: string): boolean {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
  const key = randomBytes(SERVER_KEY_BYTES);
  const text = Buffer.from(`${key.toString("hex")}\n`, "latin1");
  try {
    writeSync(fd, text);
  } finally {
    key.fill(0);
    text.fill(0);
    closeSync(fd);
  }
  return true;
}

/**
 * The server key from `PRP_AUTHORITY_SERVER_KEY` (64 hex digits). The variable is removed from
 * `env` once read, so that no process the host starts later inherits it.
 */
export function serverKeyFromEnvironment(env: NodeJS.ProcessEnv = process.env): ServerKey {
  const text = env[SERVER_KEY_ENV];
  delete env[SERVER_KEY_ENV];
  if (text === undefined || text === "")
    throw new StateError("server_key_missing", SERVER_KEY_ENV, "the environment variable is not set");
  const key = ServerKey.fromHex(text);
  if (!key)
    throw new StateError("server_key_invalid", SERVER_KEY_ENV, `the environment variable must hold ${KEY_FORMAT}`);
  return key;
}
