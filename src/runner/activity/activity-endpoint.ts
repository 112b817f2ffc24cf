import { randomBytes } from "node:crypto";
import { chmodSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { writePrivateFile } from "../../storage/private-file.js";
import { activityPayload, type ActivityPayload } from "./activity-input.js";
import { DESCRIPTOR_SCHEMA, readOneMessage, type ActivityReply } from "./activity-protocol.js";
import type { HarnessActivity } from "./harness-activity.js";
import { DESCRIPTOR_FILE, SECRET_ENV } from "../../harness/notification-env.js";

/** What recording one activity came to: committed (durable outbox, or the local stream), or refused because the run is over. */
export type RecordOutcome = "recorded" | "run_ended";

export type ActivityRecorder = (payload: ActivityPayload) => Promise<RecordOutcome>;

const SOCKET_FILE = "runtime-notification.sock";
/** A client that connects and says nothing is dropped after this long. */
const IDLE_MS = 30_000;

/**
 * The runner's side of runtime activity recording (runtime.md §13.2): a Unix socket (0600) and a
 * descriptor file (0600) naming it, both in the run's private activity folder
 * (HarnessActivity.dir). A request is served only with the current harness generation's secret
 * (HarnessActivity.admits). Each runner process also draws a new opaque context, so a context
 * captured before a process recovery is refused after it, and nothing is recorded for it.
 */
export class ActivityEndpoint {
  private constructor(
    readonly descriptorPath: string,
    readonly socketPath: string,
    readonly context: string,
    private readonly server: Server,
  ) {}

  /** Serves the socket, then writes the descriptor to name it. */
  static async open(activity: HarnessActivity, record: ActivityRecorder): Promise<ActivityEndpoint> {
    const socketPath = join(activity.dir, SOCKET_FILE);
    const context = `ctx_${randomBytes(18).toString("base64url")}`;
    const server = createServer((socket) => serve(socket, context, activity, record));
    await listenPrivately(server, socketPath);
    const descriptorPath = join(activity.dir, DESCRIPTOR_FILE);
    writePrivateFile(descriptorPath, `${JSON.stringify({ schema: DESCRIPTOR_SCHEMA, socket: socketPath })}\n`);
    return new ActivityEndpoint(descriptorPath, socketPath, context, server);
  }

  /** Stops serving: a later helper call finds no runner. The descriptor stays, naming a socket that is gone. */
  close(): void {
    this.server.close();
    rmSync(this.socketPath, { force: true });
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

function serve(socket: Socket, context: string, activity: HarnessActivity, record: ActivityRecorder): void {
  socket.on("error", () => {}); // a helper that went away only loses its answer
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  const reply = (answer: ActivityReply) => {
    if (!socket.destroyed) socket.end(`${JSON.stringify(answer)}\n`);
  };
  readOneMessage(socket, (message) => {
    socket.setTimeout(0); // from here the answer waits only for the commit
    const invalid = {
      ok: false,
      code: "invalid_request",
      message:
        'expected one JSON line: {op: "context", secret} or {op: "record", secret, context, namespace, activityKey}',
    } as const;
    if (message === null) return reply(invalid);
    // Before anything else, even the context: only the harness the runner is running now may ask.
    if (!activity.admits(message.secret)) {
      return reply({
        ok: false,
        code: "generation_refused",
        message: `this request does not carry the secret of the harness the runner is running now (${SECRET_ENV}): only that harness and the tools it starts may record activity for this run; another run's harness, an earlier harness of this run, or a process never given the secret is refused. Nothing was recorded`,
      });
    }
    if (message.op === "context") return reply({ ok: true, context });
    if (
      message.op !== "record" ||
      typeof message.context !== "string" ||
      typeof message.namespace !== "string" ||
      typeof message.activityKey !== "string"
    )
      return reply(invalid);
    if (message.context !== context) {
      return reply({
        ok: false,
        code: "context_invalidated",
        message:
          "this context is not the runner's current one: a runner recovery or warm attachment since it was captured invalidated it; nothing was recorded (capture a new context with notification-context before the next operation)",
      });
    }
    const payload = activityPayload(message.namespace, message.activityKey);
    if (!payload.ok)
      return reply({ ok: false, code: "invalid_argument", message: `${payload.error.path}: ${payload.error.message}` });
    void record(payload.value).then((outcome) =>
      reply(
        outcome === "recorded"
          ? { ok: true }
          : { ok: false, code: "run_ended", message: "the run has ended: nothing more is recorded for it" },
      ),
    );
  });
}
