import { lstatSync } from "node:fs";
import { connect } from "node:net";
import { isAbsolute } from "node:path";
import { readFileBounded } from "../../contract/bounded-read.js";
import { ownerOnly, uid } from "../../storage/private-sqlite.js";
import { activityPayload } from "./activity-input.js";
import { DESCRIPTOR_SCHEMA, MAX_MESSAGE_BYTES, readOneMessage, type ActivityRequest } from "./activity-protocol.js";
import { CONTEXT_ENV, SECRET_ENV } from "../../harness/notification-env.js";

/**
 * How a helper call ended, and its exit status: 0 done; 2 invalid arguments (nothing sent);
 * 3 refused by the runner (not the current harness's secret, an invalidated context, or a run
 * that has ended: nothing recorded);
 * 4 no runner to ask, or it went away before it answered.
 */
export type HelperOutcome =
  { ok: true; context?: string } | { ok: false; exitCode: 2 | 3 | 4; code: string; message: string };

const fail = (exitCode: 2 | 3 | 4, code: string, message: string): HelperOutcome => ({
  ok: false,
  exitCode,
  code,
  message,
});

/** `notification-context`: the runner's current opaque context. */
export function captureContext(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<HelperOutcome> {
  return ask(env, { op: "context" }, timeoutMs);
}

/** `record-activity`: resolves ok only once the runner has committed the event (runtime.md §13.2). */
export function recordActivity(
  env: NodeJS.ProcessEnv,
  context: string,
  namespace: string,
  activityKey: string,
  timeoutMs: number,
): Promise<HelperOutcome> {
  const payload = activityPayload(namespace, activityKey);
  if (!payload.ok) {
    const argument = payload.error.path.includes("activityKey")
      ? "ACTIVITY_KEY"
      : payload.error.path.includes("namespace")
        ? "NAMESPACE"
        : "the arguments";
    return Promise.resolve(
      fail(
        2,
        "invalid_argument",
        `${argument}: ${payload.error.message} (each must be 1–160 Unicode code points with no control character U+0000–U+001F and no DEL)`,
      ),
    );
  }
  if (context === "")
    return Promise.resolve(
      fail(2, "invalid_argument", "CONTEXT is empty: capture one with notification-context before the operation"),
    );
  return ask(env, { op: "record", context, ...payload.value }, timeoutMs);
}

/** The socket the descriptor names; the descriptor must be a private regular file of ours (it decides where records go). */
function socketFromDescriptor(
  env: NodeJS.ProcessEnv,
): { ok: true; path: string } | { ok: false; outcome: HelperOutcome } {
  const unavailable = (message: string) => ({ ok: false as const, outcome: fail(4, "runner_unavailable", message) });
  const path = env[CONTEXT_ENV];
  if (!path) return unavailable(`${CONTEXT_ENV} is not set: this process was not started by a PRP runner`);
  let st;
  try {
    st = lstatSync(path);
  } catch (err) {
    return unavailable(
      `cannot read the endpoint descriptor ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  if (!st.isFile() || st.uid !== uid() || !ownerOnly(st.mode))
    return unavailable(`the endpoint descriptor ${path} is not a private (0600) regular file of this user: refused`);
  const read = readFileBounded(path, { maxBytes: MAX_MESSAGE_BYTES });
  if (!read.ok) return unavailable(`cannot read the endpoint descriptor ${path}: ${read.error.message}`);
  let descriptor: { schema?: unknown; socket?: unknown };
  try {
    descriptor = JSON.parse(read.bytes.toString("utf8")) as typeof descriptor;
  } catch {
    descriptor = {};
  }
  if (
    descriptor?.schema !== DESCRIPTOR_SCHEMA ||
    typeof descriptor.socket !== "string" ||
    !isAbsolute(descriptor.socket)
  ) {
    return unavailable(`the endpoint descriptor ${path} is not a ${DESCRIPTOR_SCHEMA} naming an absolute socket path`);
  }
  return { ok: true, path: descriptor.socket };
}

/** Sends `request` with the harness generation's secret from `env` (the runner refuses a request without it). */
function ask(env: NodeJS.ProcessEnv, op: ActivityRequest, timeoutMs: number): Promise<HelperOutcome> {
  const secret = env[SECRET_ENV];
  const request: ActivityRequest = secret ? { ...op, secret } : op;
  const socketPath = socketFromDescriptor(env);
  if (!socketPath.ok) return Promise.resolve(socketPath.outcome);
  return new Promise((done) => {
    let sent = false;
    let settled = false;
    const settle = (outcome: HelperOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      done(outcome);
    };
    // Once the request is out, its outcome is unknown until the runner answers: say so.
    const gone = (
      why: string,
      consequence = "the runner's recovery invalidates this context, so it cannot be recorded twice with it",
    ) =>
      settle(
        fail(
          4,
          "runner_unavailable",
          sent && request.op === "record"
            ? `${why} before the runner answered: the activity may or may not be recorded (${consequence})`
            : `${why}: no runner serves ${socketPath.path}`,
        ),
      );
    const timer = setTimeout(
      () =>
        gone(
          `no answer within ${timeoutMs} ms`,
          "the runner may still commit it: a retry with this context could record it twice",
        ),
      timeoutMs,
    );
    const socket = connect(socketPath.path, () => {
      sent = true;
      socket.write(`${JSON.stringify(request)}\n`);
    });
    socket.on("error", (err: NodeJS.ErrnoException) => gone(`the connection failed (${err.code ?? err.message})`));
    socket.on("close", () => gone("the connection closed"));
    readOneMessage(socket, (reply) => {
      if (reply?.ok === true)
        return settle({ ok: true, ...(typeof reply.context === "string" ? { context: reply.context } : {}) });
      if (reply?.ok === false && typeof reply.code === "string" && typeof reply.message === "string") {
        return settle(
          fail(
            reply.code === "invalid_argument" || reply.code === "invalid_request" ? 2 : 3,
            reply.code,
            reply.message,
          ),
        );
      }
      gone("the runner's answer was not understood");
    });
  });
}
