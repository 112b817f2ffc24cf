import { createReadStream } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { basename } from "node:path";
import { parseJson } from "../contract/json-input.js";
import { submitCommand } from "./actions.js";
import type { ApiRefusal, TimelineEvent } from "./api-types.js";
import type { BundleFiles } from "./bundle-files.js";
import type { LiveHub } from "./live-hub.js";
import type { RunBook } from "./run-book.js";
import { openEventStream, resumeAfter } from "./sse.js";

/** Events one page of the timeline may ask for (`?limit=`), and a stream sends at once. */
const MAX_PAGE = 1000;
/** A run's view is sent at most this often to each page: coalesced, not once per event batch. */
const VIEW_EVERY_MS = 250;

/** The most bytes a command from the page may have. */
const MAX_BODY_BYTES = 64 * 1024;

const STATUS_BY_CODE: Record<string, number> = {
  unknown_run: 404,
  not_found: 404,
  run_ended: 409,
  request_already_answered: 409,
  replay_read_only: 409,
  body_too_large: 413,
};

export interface ApiContext {
  book: RunBook;
  hub: LiveHub;
  bundles: BundleFiles | undefined;
  onError: (err: Error) => void;
}

export const sendJson = (res: ServerResponse, status: number, value: unknown) => {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  res.end(JSON.stringify(value));
};

/** A typed refusal: `{error: {code, path, message}}` with the status its code implies. */
export const refuse = (res: ServerResponse, error: ApiRefusal) =>
  sendJson(res, STATUS_BY_CODE[error.code] ?? 400, { error });

const pageLimit = (text: string | null): number => {
  const n = Number(text ?? MAX_PAGE);
  return Number.isSafeInteger(n) && n > 0 ? Math.min(n, MAX_PAGE) : MAX_PAGE;
};

/** The JSON API and its event streams, under /api/. */
export async function handleApi(ctx: ApiContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const { book, hub } = ctx;
  const parts = url.pathname.split("/").slice(2).map(decodeURIComponent);
  if (req.method === "GET" && parts.length === 1 && parts[0] === "runs") {
    await hub.refresh();
    return sendJson(res, 200, { runs: book.rows(), live: book.source.live });
  }
  if (req.method === "GET" && parts.length === 2 && parts[0] === "runs" && parts[1] === "stream") {
    await hub.refresh();
    const stream = openEventStream(res, () => stop());
    const stop = hub.listen(() => stream.send("runs", book.rows()));
    return stream.send("runs", book.rows());
  }
  if (parts[0] !== "runs" || parts.length < 2)
    return refuse(res, { code: "not_found", path: url.pathname, message: "no such API route" });
  const runId = parts[1]!;
  await hub.refresh();
  if (!book.has(runId))
    return refuse(res, { code: "unknown_run", path: "/runId", message: `no run ${runId} here: open the runs list` });
  const rest = parts.slice(2).join("/");
  if (req.method === "GET" && rest === "") {
    const upto = url.searchParams.get("upto");
    return sendJson(res, 200, await book.view(runId, upto === null ? undefined : Number(upto)));
  }
  if (req.method === "GET" && rest === "events") {
    const events: TimelineEvent[] = await book.eventsAfter(
      runId,
      resumeAfter(undefined, url.searchParams.get("after")),
      pageLimit(url.searchParams.get("limit")),
    );
    return sendJson(res, 200, { events });
  }
  if (req.method === "GET" && rest === "stream") return streamRun(ctx, runId, req, res, url);
  if (req.method === "POST" && rest === "commands") {
    const body = await readBody(req);
    if (!body.ok) return refuse(res, body.error);
    const submitted = await submitCommand(book, runId, body.value);
    if (!submitted.ok) return refuse(res, submitted.error);
    return sendJson(res, 200, { receipt: submitted.value });
  }
  if (req.method === "GET" && parts[2] === "artifacts" && parts.length > 3) {
    const name = parts.slice(3).join("/");
    const file = ctx.bundles?.open(runId, name);
    if (!file)
      return refuse(res, {
        code: "not_found",
        path: `/artifacts/${name}`,
        message: `run ${runId} has no bundle file ${name}`,
      });
    const inline = url.searchParams.has("open");
    res.writeHead(200, {
      "content-type": inline ? "text/plain; charset=utf-8" : "application/octet-stream",
      "content-disposition": `${inline ? "inline" : "attachment"}; filename="${basename(name).replace(/[^\w.-]/g, "_")}"`,
      "content-length": file.bytes,
    });
    // A read that fails midway (a file truncated or replaced under it) ends this response, not the process.
    const body = createReadStream("", { fd: file.fd });
    body.on("error", (err) => {
      ctx.onError(new Error(`reading bundle file ${name} of run ${runId}: ${err.message}`));
      res.destroy();
    });
    return void body.pipe(res);
  }
  return refuse(res, { code: "not_found", path: url.pathname, message: "no such API route" });
}

/**
 * The run's events from the resume point, then each as it is committed; and the run's view,
 * whenever it has changed, at most every VIEW_EVERY_MS: a page following a busy run gets its
 * events as they come, and the (larger) view only as often as a person can read it.
 */
async function streamRun(
  ctx: ApiContext,
  runId: string,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const { book, hub } = ctx;
  let sent = resumeAfter(req.headers["last-event-id"], url.searchParams.get("after"));
  let viewSent = -1;
  let viewAt = 0;
  let viewTimer: NodeJS.Timeout | undefined;
  const stream = openEventStream(res, () => {
    stop();
    clearTimeout(viewTimer);
  });
  let sending: Promise<void> = Promise.resolve();
  const then = (step: () => Promise<void>) => {
    // Pushed from the hub's tick, where nobody awaits it: a failed read ends this page's stream
    // (the page reconnects from its last event id) rather than leave a rejection to kill the process.
    sending = sending.then(step).catch((err: Error) => {
      ctx.onError(new Error(`the stream of run ${runId}: ${err.message}`));
      res.end();
    });
  };
  const sendView = async () => {
    viewTimer = undefined;
    if (stream.closed() || book.version(runId) === viewSent) return;
    viewSent = book.version(runId);
    viewAt = Date.now();
    stream.send("view", await book.view(runId));
  };
  const push = () =>
    then(async () => {
      for (;;) {
        const items = await book.eventsAfter(runId, sent, MAX_PAGE);
        for (const item of items) {
          stream.send("prp", item, item.position);
          sent = item.position;
        }
        if (items.length < MAX_PAGE || stream.closed()) break;
      }
      if (viewTimer === undefined && !stream.closed())
        viewTimer = setTimeout(() => then(sendView), Math.max(0, viewAt + VIEW_EVERY_MS - Date.now()));
    });
  const stop = hub.listen((runs) => {
    if (runs.has(runId)) push();
  });
  push();
  await sending;
}

async function readBody(
  req: IncomingMessage,
): Promise<{ ok: true; value: unknown } | { ok: false; error: ApiRefusal }> {
  if (!/^application\/json\b/.test(req.headers["content-type"] ?? ""))
    return { ok: false, error: { code: "invalid_command", path: "", message: "send the command as application/json" } };
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > MAX_BODY_BYTES)
      return {
        ok: false,
        error: { code: "body_too_large", path: "", message: `a command may have at most ${MAX_BODY_BYTES} bytes` },
      };
    chunks.push(chunk);
  }
  const parsed = parseJson(Buffer.concat(chunks));
  return parsed.ok
    ? { ok: true, value: parsed.value }
    : { ok: false, error: { code: parsed.error.code, path: parsed.error.path, message: parsed.error.message } };
}
