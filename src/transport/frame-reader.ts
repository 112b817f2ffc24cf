import type { RawData, WebSocket } from "ws";
import { fail, ok, transportError, type Result, type TransportError } from "./errors.js";

/** ws error codes that name a refusal the protocol cares about (everything else is a protocol error). */
const WS_ERRORS: Record<string, TransportError["code"]> = {
  WS_ERR_EXPECTED_MASK: "unmasked_frame",
  WS_ERR_UNSUPPORTED_MESSAGE_LENGTH: "frame_too_large",
};

/**
 * The text frames of one WebSocket, one at a time, in order. The socket reads only while someone
 * waits in next(): while a handler works, or the authority's hooks run, TCP backpressure holds
 * the peer, and what was already read (at most one socket read plus one frame) waits here under
 * `maxQueuedBytes`. A binary frame, a ws-level error (an unmasked or oversize frame, a bad opcode)
 * or the close ends the reader with that diagnostic; the first one wins.
 */
export class FrameReader {
  private readonly queue: Array<{ text: string; bytes: number }> = [];
  private queuedBytes = 0;
  private failure: TransportError | null = null;
  private wake: (() => void) | null = null;

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
    this.queuedBytes -= frame.bytes;
    return ok(frame.text);
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
  }

  private receive(data: RawData, isBinary: boolean): void {
    if (this.failure !== null) return;
    if (isBinary) return this.end(transportError("binary_frame", "", "only text frames are accepted"));
    const bytes = data as Buffer; // binaryType stays "nodebuffer": one Buffer per message, UTF-8 checked by ws
    this.queuedBytes += bytes.length;
    if (this.queuedBytes > this.maxQueuedBytes)
      return this.end(transportError("receive_overflow", "", `more than ${this.maxQueuedBytes} bytes arrived unread`));
    this.queue.push({ text: bytes.toString("utf8"), bytes: bytes.length });
    this.wake?.();
  }
}
