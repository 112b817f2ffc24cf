import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { activityPayload, type ActivityPayload } from "./activity-input.js";
import { DESCRIPTOR_SCHEMA, readOneMessage, type ActivityReply } from "./activity-protocol.js";
import { DESCRIPTOR_FILE } from "./notification-env.js";

/** What recording one activity came to: committed (durable outbox, or the local stream), or refused because the run is over. */
export type RecordOutcome = "recorded" | "run_ended";

export type ActivityRecorder = (payload: ActivityPayload) => Promise<RecordOutcome>;

const SOCKET_FILE = "runtime-notification.sock";
/** sockaddr_un holds 108 bytes with its NUL: a longer state path gets its socket in a private temporary folder. */
const MAX_SOCKET_PATH_BYTES = 107;
/** A client that connects and says nothing is dropped after this long. */
const IDLE_MS = 30_000;

/**
 * The runner's side of runtime activity recording (runtime.md §13.2): a Unix socket (0600) and a
 * descriptor file (0600) in the runner's private folder naming it. Each runner process draws a
 * new opaque context, so a context captured before a process recovery is refused after it, and
 * nothing is recorded for it.
 */
export class ActivityEndpoint {
  private constructor(
    readonly descriptorPath: string,
    readonly socketPath: string,
    readonly context: string,
    private readonly server: Server,
    private readonly socketDir: string | null,
  ) {}

  /** Serves the socket, then (re)writes the descriptor to name it; `dir` is private (0700) and exists. */
  static async open(dir: string, record: ActivityRecorder): Promise<ActivityEndpoint> {
    const folder = resolve(dir);
    let socketDir: string | null = null;
    let socketPath = join(folder, SOCKET_FILE);
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
      socketDir = mkdtempSync(join(tmpdir(), "prp-activity-")); // 0700
      socketPath = join(socketDir, SOCKET_FILE);
    }
    rmSync(socketPath, { force: true }); // a predecessor's socket: its process is gone
    const context = `ctx_${randomBytes(18).toString("base64url")}`;
    const server = createServer((socket) => serve(socket, context, record));
    await listenPrivately(server, socketPath);
    const descriptorPath = join(folder, DESCRIPTOR_FILE);
    writePrivateFile(descriptorPath, `${JSON.stringify({ schema: DESCRIPTOR_SCHEMA, socket: socketPath })}\n`);
    return new ActivityEndpoint(descriptorPath, socketPath, context, server, socketDir);
  }

  /** Stops serving: a later helper call finds no runner. The descriptor stays, naming a socket that is gone. */
  close(): void {
    this.server.close();
    rmSync(this.socketDir ?? this.socketPath, { recursive: true, force: true });
  }
}

/** Binds under umask 177 (bind creates the socket file at once, never wider than 0600), then says so again with chmod. */
function listenPrivately(server: Server, path: string): Promise<void> {
  return new Promise((done, fail) => {
    server.once("error", fail);
    const previous = process.umask(0o177);
    try {
      server.listen(path, () => {
        server.off("error", fail);
        chmodSync(path, 0o600);
        done();
      });
    } finally {
      process.umask(previous);
    }
  });
}

/** Written beside, then renamed over: a reader sees the old descriptor or the new one, never half of one. */
function writePrivateFile(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  rmSync(temporary, { force: true });
  writeFileSync(temporary, text, { mode: 0o600, flag: "wx" });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

function serve(socket: Socket, context: string, record: ActivityRecorder): void {
  socket.on("error", () => {}); // a helper that went away only loses its answer
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  const reply = (answer: ActivityReply) => {
    if (!socket.destroyed) socket.end(`${JSON.stringify(answer)}\n`);
  };
  readOneMessage(socket, (message) => {
    socket.setTimeout(0); // from here the answer waits only for the commit
    if (message?.op === "context") return reply({ ok: true, context });
    if (message?.op !== "record" || typeof message.context !== "string" || typeof message.namespace !== "string" || typeof message.activityKey !== "string") {
      return reply({ ok: false, code: "invalid_request", message: "expected one JSON line: {op: \"context\"} or {op: \"record\", context, namespace, activityKey}" });
    }
    if (message.context !== context) {
      return reply({ ok: false, code: "context_invalidated", message: "this context is not the runner's current one: a runner recovery or warm attachment since it was captured invalidated it; nothing was recorded (capture a new context with notification-context before the next operation)" });
    }
    const payload = activityPayload(message.namespace, message.activityKey);
    if (!payload.ok) return reply({ ok: false, code: "invalid_argument", message: `${payload.error.path}: ${payload.error.message}` });
    void record(payload.value).then((outcome) =>
      reply(outcome === "recorded" ? { ok: true } : { ok: false, code: "run_ended", message: "the run has ended: nothing more is recorded for it" }),
    );
  });
}
