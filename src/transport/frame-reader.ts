import type { RawData, WebSocket } from "ws";
import { fail, ok, transportError, type Result, type TransportError } from "./errors.js";

/** ws error codes that name a refusal the protocol cares about (everything else is a protocol error). */
const WS_ERRORS: Record<string, TransportError["code"]> = {
  WS_ERR_EXPECTED_MASK: "unmasked_frame",
  WS_ERR_UNSUPPORTED_MESSAGE_LENGTH: "frame_too_large",
};

/** Takes one frame, or the reader's end; a returned promise holds the next frame back until it settles. */
export type FrameConsumer = (frame: Result<Buffer>) => void | Promise<void>;

/**
 * The text frames of one WebSocket, one at a time, in order: pulled with next() (the handshake),
 * then pushed to one consumer (deliver()). The socket reads only while someone waits in next()
 * or the consumer is not busy: while a handler works, or the authority's hooks run, TCP
 * backpressure holds the peer, and what was already read (at most one socket read plus one
 * frame) waits here under `maxQueuedBytes`. A binary frame, a ws-level error (an unmasked or
 * oversize frame, a bad opcode) or the close ends the reader with that diagnostic; the first one
 * wins.
 */
export class FrameReader {
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private failure: TransportError | null = null;
  private wake: (() => void) | null = null;
  private consumer: FrameConsumer | null = null;
  private busy = false;
  private draining = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly maxQueuedBytes: number,
  ) {
    ws.pause();
    ws.on("message", (data: RawData, isBinary: boolean) => this.receive(data, isBinary));
    ws.on("error", (err: Error & { code?: string }) => {
      const code = WS_ERRORS[err.code ?? ""] ?? "websocket_protocol_error";
      this.end(transportError(code, "", `the WebSocket failed: ${err.message}`));
    });
    ws.on("close", (code: number, reason: Buffer) => {
      const peer = reason.toString("utf8");
      this.end({
        ...transportError("socket_closed", "", `the connection closed (${code}${peer ? ` ${peer}` : ""})`),
        ...(peer ? { peerCode: peer } : {}),
      });
    });
    // A socket that closed before this reader listened would otherwise only surface as a timeout.
    if (ws.readyState !== ws.OPEN) this.end(transportError("socket_closed", "", "the connection was not open"));
  }

  /** The next text frame, or why there will be none; with a timeout, waits at most that long. */
  async next(timeoutMs?: number): Promise<Result<string>> {
    while (this.queue.length === 0 && this.failure === null) {
      let timer: NodeJS.Timeout | undefined;
      const woken = new Promise<boolean>((resolve) => {
        this.wake = () => resolve(true);
        if (timeoutMs !== undefined) timer = setTimeout(() => resolve(false), timeoutMs);
      });
      this.ws.resume();
      const inTime = await woken;
      clearTimeout(timer);
      this.wake = null;
      if (this.failure === null) this.ws.pause(); // once ended, the socket keeps reading for the close handshake
      if (!inTime) return fail("auth_timeout", "", `no message within ${timeoutMs} ms`);
    }
    const frame = this.queue.shift();
    if (frame === undefined) return { ok: false, error: this.failure! };
    this.queuedBytes -= frame.length;
    return ok(frame.toString("utf8"));
  }

  /**
   * From now on hands each frame to `consume` as it arrives, in order, and then the reader's end,
   * once. Unlike a loop over next(), an idle connection holds no pending promise: a read awaited
   * for a whole lease interval lives long enough to reach V8's old generation, and at 10,000
   * connections those made full collections most of an idle authority's CPU (bench:idle).
   */
  deliver(consume: FrameConsumer): void {
    this.consumer = consume;
    this.drain();
  }

  /**
   * Ends the reader with a diagnostic of the caller's (a fatal frame, or its own close), so a
   * waiting next() returns. The socket reads again: the close handshake needs the peer's reply.
   */
  end(error: TransportError): void {
    if (this.failure !== null) return;
    this.failure = error;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.ws.resume();
    this.wake?.();
    this.drain();
  }

  /** Hands over what waits while the consumer is free; a consumer that ends the reader is re-entered by nothing. */
  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.consumer !== null && !this.busy) {
        const consume = this.consumer;
        const frame = this.queue.shift();
        let taken: Result<Buffer>;
        if (frame !== undefined) {
          this.queuedBytes -= frame.length;
          taken = ok(frame);
        } else if (this.failure !== null) {
          taken = { ok: false, error: this.failure };
          this.consumer = null; // the end is handed over once
        } else {
          return this.ws.resume();
        }
        const pending = consume(taken);
        if (pending) this.hold(pending);
      }
    } finally {
      this.draining = false;
    }
  }

  private hold(pending: Promise<void>): void {
    this.busy = true;
    if (this.failure === null) this.ws.pause(); // once ended, the socket keeps reading for the close handshake
    const release = () => {
      this.busy = false;
      this.drain();
    };
    pending.then(release, release);
  }

  private receive(data: RawData, isBinary: boolean): void {
    if (this.failure !== null) return;
    if (isBinary) return this.end(transportError("binary_frame", "", "only text frames are accepted"));
    const bytes = data as Buffer; // binaryType stays "nodebuffer": one Buffer per message, UTF-8 checked by ws
    this.queuedBytes += bytes.length;
    if (this.queuedBytes > this.maxQueuedBytes)
      return this.end(transportError("receive_overflow", "", `more than ${this.maxQueuedBytes} bytes arrived unread`));
    this.queue.push(bytes);
    this.wake?.();
    this.drain();
  }
}
