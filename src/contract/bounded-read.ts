import { closeSync, openSync, readSync } from "node:fs";

/** Why an input was not read: it could not be, or it is over its limit (then it was read no further). */
export interface ReadError {
  code: "unreadable" | "frame_too_large";
  path: "";
  message: string;
  /** The file or stream read ("stdin"). */
  source: string;
  /** The limit passed, in bytes (frame_too_large). */
  limitBytes?: number;
  /** The 1-based line that went over `maxLineBytes`, when that was the limit. */
  line?: number;
}

export type BoundedRead = { ok: true; bytes: Buffer } | { ok: false; error: ReadError };

export interface ReadLimits {
  /** The most bytes the whole input may have. */
  maxBytes: number;
  /** The most bytes one line may have, newline excluded (NDJSON: one frame a line). */
  maxLineBytes?: number;
}

const CHUNK_BYTES = 65_536;

/**
 * Collects an input's bytes up to its limits. Reading stops at the first byte past a limit —
 * at most `maxBytes + 1` bytes are ever read — so an endless input (/dev/zero, a pipe that
 * never closes) costs no more memory or time than the limit.
 */
class Collector {
  private readonly chunks: Buffer[] = [];
  private total = 0;
  private line = 1;
  private lineBytes = 0;

  constructor(
    private readonly source: string,
    private readonly limits: ReadLimits,
  ) {}

  /** How many more bytes to read to learn whether the input is over its limit. */
  get wanted(): number {
    return this.limits.maxBytes + 1 - this.total;
  }

  /** Takes a chunk; a refusal once a limit is passed. */
  take(chunk: Buffer): ReadError | null {
    const max = this.limits.maxBytes;
    if (this.total + chunk.length > max)
      return this.refuse(max, `input is larger than the ${max}-byte limit (reading stopped at byte ${max + 1})`);
    const lineError = this.limits.maxLineBytes === undefined ? null : this.checkLines(chunk, this.limits.maxLineBytes);
    if (lineError) return lineError;
    this.chunks.push(chunk);
    this.total += chunk.length;
    return null;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.total);
  }

  private checkLines(chunk: Buffer, maxLine: number): ReadError | null {
    for (let start = 0; ;) {
      const nl = chunk.indexOf(0x0a, start);
      this.lineBytes += (nl === -1 ? chunk.length : nl) - start;
      if (this.lineBytes > maxLine)
        return {
          ...this.refuse(maxLine, `line is longer than the ${maxLine}-byte frame limit (reading stopped there)`),
          line: this.line,
        };
      if (nl === -1) return null;
      this.line++;
      this.lineBytes = 0;
      start = nl + 1;
    }
  }

  private refuse(limitBytes: number, message: string): ReadError {
    this.chunks.length = 0;
    return { code: "frame_too_large", path: "", message, source: this.source, limitBytes };
  }
}

const unreadable = (source: string, err: unknown): BoundedRead => ({
  ok: false,
  error: { code: "unreadable", path: "", message: (err as Error).message, source },
});

/**
 * Reads a file (or a device, or a named pipe) into memory within its limits. Synchronous, like
 * readFileSync, for the command-line tools and script loading that read one input at start.
 */
export function readFileBounded(path: string, limits: ReadLimits): BoundedRead {
  const collector = new Collector(path, limits);
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    return unreadable(path, err);
  }
  try {
    for (;;) {
      const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, collector.wanted));
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) return { ok: true, bytes: collector.bytes() };
      const error = collector.take(buffer.subarray(0, n));
      if (error) return { ok: false, error };
    }
  } catch (err) {
    return unreadable(path, err);
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads a stream (stdin) into memory within its limits. Past a limit the stream is destroyed:
 * nothing more is read from it.
 */
export function readStreamBounded(
  stream: NodeJS.ReadableStream & { destroy(): void },
  source: string,
  limits: ReadLimits,
): Promise<BoundedRead> {
  const collector = new Collector(source, limits);
  return new Promise((resolve) => {
    const finish = (result: BoundedRead) => {
      stream.removeListener("data", onData);
      stream.removeListener("end", onEnd);
      stream.removeListener("error", onError);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      const error = collector.take(chunk);
      if (!error) return;
      stream.destroy();
      finish({ ok: false, error });
    };
    const onEnd = () => finish({ ok: true, bytes: collector.bytes() });
    const onError = (err: Error) => finish(unreadable(source, err));
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
  });
}
