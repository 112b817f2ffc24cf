import type { ServerResponse } from "node:http";
import type { AuthorityStore, LoggedEvent } from "../authority/store.js";
import { END_FRAME, eventFrame, KEEP_ALIVE_FRAME } from "./sse-frames.js";

/** Rows read from the store at once, by a run's reader or by one follower catching up. */
const READ_PAGE = 500;

export interface EventFeedOptions {
  store: Pick<AuthorityStore, "eventLog" | "runCursor">;
  /** How often the followed runs' cursors are read for new commits. */
  pollMs: number;
  /** A follower whose socket holds more unsent bytes than this is closed; it resumes by Last-Event-ID. */
  maxBufferedBytes: number;
  keepAliveMs: number;
  onError: (err: Error) => void;
}

interface Follower {
  res: ServerResponse;
  /** Frames up to this seq were already sent to it while it caught up on its own. */
  skipThrough: number;
}

/** One followed run: ONE reader and the followers it writes to. */
interface Channel {
  runId: string;
  /** The last seq the reader has sent to the channel's followers. */
  cursor: number;
  followers: Set<Follower>;
  reading: boolean;
  /** A wake arrived while reading: read once more after. */
  again: boolean;
  /** A wake's read is queued for the next turn of the event loop: later wakes join it. */
  woken: boolean;
}

/** One page's frames as one buffer, with each frame's start, so that a late joiner gets a suffix. */
interface Page {
  bytes: Buffer;
  seqs: number[];
  starts: number[];
  terminal: boolean;
}

function encodePage(rows: readonly LoggedEvent[]): Page {
  const seqs: number[] = [];
  const starts: number[] = [];
  let text = "";
  let offset = 0;
  for (const row of rows) {
    const frame = eventFrame(row.sourceSeq, row.envelope);
    seqs.push(row.sourceSeq);
    starts.push(offset);
    offset += Buffer.byteLength(frame);
    text += frame;
  }
  return { bytes: Buffer.from(text), seqs, starts, terminal: rows.at(-1)?.eventType === "run.terminal" };
}

/**
 * The live event streams. Each followed run has one reader: it reads each newly committed row
 * once, encodes the page's SSE frames once, and writes those same bytes to every follower —
 * nothing is parsed, reduced or serialised per follower. A follower that starts behind the
 * reader catches up from the store on its own, then joins. Commits are learnt by a cheap poll
 * of the followed runs' cursors, and sooner by `wake` when the authority says it committed.
 */
export class EventFeed {
  private readonly channels = new Map<string, Channel>();
  private readonly poll: NodeJS.Timeout;
  private readonly keepAlive: NodeJS.Timeout;
  private polling = false;
  private closed = false;

  constructor(private readonly options: EventFeedOptions) {
    this.poll = setInterval(() => this.pollCursors(), options.pollMs);
    this.keepAlive = setInterval(() => this.sendKeepAlive(), options.keepAliveMs);
    this.poll.unref();
    this.keepAlive.unref();
  }

  /** Followers across every run, for tests and the bench. */
  followerCount(): number {
    let n = 0;
    for (const ch of this.channels.values()) n += ch.followers.size;
    return n;
  }

  /**
   * Streams the run's events after `after` to `res` (whose SSE headers are sent): first what is
   * already committed, then each commit, and after run.terminal the end frame, then it closes.
   */
  async follow(runId: string, after: number, res: ServerResponse): Promise<void> {
    let at = after;
    const cursor = await this.options.store.runCursor(runId);
    if (cursor?.terminalSourceSeq != null && at >= cursor.terminalSourceSeq) return void res.end(END_FRAME);
    for (;;) {
      if (this.closed || res.destroyed) return void res.end();
      const ch = this.channels.get(runId);
      // Joined in the same tick as this check: the reader's next frames are exactly those after ch.cursor.
      if (!ch || at >= ch.cursor) return this.join(runId, at, res);
      const rows = await this.options.store.eventLog(runId, at, READ_PAGE);
      if (rows.length === 0) return this.join(runId, at, res);
      const page = encodePage(rows);
      if (!res.write(page.bytes) && !(await drained(res))) return;
      at = rows.at(-1)!.sourceSeq;
      if (page.terminal) return void res.end(END_FRAME);
    }
  }

  private join(runId: string, at: number, res: ServerResponse): void {
    let ch = this.channels.get(runId);
    if (!ch) {
      ch = { runId, cursor: at, followers: new Set(), reading: false, again: false, woken: false };
      this.channels.set(runId, ch);
    }
    const follower: Follower = { res, skipThrough: at };
    ch.followers.add(follower);
    const channel = ch;
    res.once("close", () => this.leave(channel, follower));
    // It may have joined after the last commit the poll saw: look now rather than one poll later.
    this.read(channel);
  }

  private leave(ch: Channel, follower: Follower): void {
    ch.followers.delete(follower);
    if (ch.followers.size === 0 && this.channels.get(ch.runId) === ch) this.channels.delete(ch.runId);
  }

  /**
   * A commit of `runId` is known: its reader reads at the next turn of the event loop rather
   * than at the next poll. Each event of a group commit wakes its run, each in a callback of its
   * own: the wakes of one turn share one read, where a read each would find the first read's
   * rows already sent and the store empty.
   */
  wake(runId: string): void {
    const ch = this.channels.get(runId);
    if (!ch || ch.woken) return;
    ch.woken = true;
    setImmediate(() => {
      ch.woken = false;
      if (this.channels.get(runId) === ch) this.read(ch);
    });
  }

  private pollCursors(): void {
    if (this.polling || this.channels.size === 0) return;
    this.polling = true;
    void (async () => {
      for (const ch of [...this.channels.values()]) {
        const cursor = await this.options.store.runCursor(ch.runId);
        if (cursor && cursor.ackedSourceSeq > ch.cursor) this.read(ch);
      }
    })()
      .catch((err: Error) => this.options.onError(new Error(`the event feed's poll: ${err.message}`)))
      .finally(() => (this.polling = false));
  }

  private read(ch: Channel): void {
    if (ch.reading) {
      ch.again = true;
      return;
    }
    ch.reading = true;
    void this.readPages(ch)
      .catch((err: Error) => {
        // A failed read ends this run's streams; their clients resume from their last event id.
        this.options.onError(new Error(`the event stream of run ${ch.runId}: ${err.message}`));
        this.endChannel(ch, undefined);
      })
      .finally(() => {
        ch.reading = false;
        if (ch.again && this.channels.get(ch.runId) === ch) {
          ch.again = false;
          this.read(ch);
        }
      });
  }

  private async readPages(ch: Channel): Promise<void> {
    for (;;) {
      ch.again = false;
      const rows = await this.options.store.eventLog(ch.runId, ch.cursor, READ_PAGE);
      if (rows.length === 0 || this.channels.get(ch.runId) !== ch) return;
      const page = encodePage(rows);
      ch.cursor = page.seqs.at(-1)!;
      for (const f of ch.followers) this.send(ch, f, page);
      if (page.terminal) return this.endChannel(ch, END_FRAME);
      if (rows.length < READ_PAGE) return;
    }
  }

  private send(ch: Channel, f: Follower, page: Page): void {
    if (f.skipThrough < page.seqs[0]!) f.res.write(page.bytes);
    else {
      // A follower that caught up past the reader: only the frames it has not had.
      const i = page.seqs.findIndex((s) => s > f.skipThrough);
      if (i >= 0) f.res.write(page.bytes.subarray(page.starts[i]));
    }
    if (f.res.writableLength > this.options.maxBufferedBytes) {
      // A reader this slow would hold the whole run in memory: cut it off; it resumes by Last-Event-ID.
      this.leave(ch, f);
      f.res.destroy();
    }
  }

  private endChannel(ch: Channel, last: Buffer | undefined): void {
    if (this.channels.get(ch.runId) === ch) this.channels.delete(ch.runId);
    for (const f of ch.followers) f.res.end(last);
    ch.followers.clear();
  }

  private sendKeepAlive(): void {
    for (const ch of this.channels.values()) for (const f of ch.followers) f.res.write(KEEP_ALIVE_FRAME);
  }

  /** Ends every stream (a client resumes elsewhere by Last-Event-ID) and stops reading. */
  close(): void {
    this.closed = true;
    clearInterval(this.poll);
    clearInterval(this.keepAlive);
    for (const ch of [...this.channels.values()]) this.endChannel(ch, undefined);
  }
}

/** Waits for a full socket to drain; false when it closed instead. */
function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.off("drain", onDrain);
      res.off("close", onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.on("drain", onDrain);
    res.on("close", onClose);
  });
}
