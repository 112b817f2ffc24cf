import pg from "pg";
import type { NoticesPart, StoreNotice } from "../store.js";
import { CHANNEL } from "./handle.js";

/**
 * How long a poll may go without reading every live run while notices arrive: a notice lost on
 * a listening connection that died without a word (a cut network, not yet noticed by TCP) is
 * acted on within this.
 */
export const FULL_READ_MS = 30_000;

/**
 * Change notices between instances on one database: one connection of its own LISTENs on the
 * channel that the parts' transactions NOTIFY, and hands other instances' notices to this
 * instance's listeners.
 */
export class PostgresNotices implements NoticesPart {
  private readonly listeners = new Set<(notice: StoreNotice) => void>();
  private listener: pg.Client | null = null;
  private closed = false;
  private reconnect: NodeJS.Timeout | null = null;
  /** The change mark: moves with each `missed` and each full read due. */
  private mark = 0;
  private fullReadAt = -Infinity;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly location: string,
    /** Tells this instance's own notices from another's. */
    private readonly origin: string,
    private readonly log: (text: string) => void,
    /** Monotonic ms for FULL_READ_MS; tests move their own. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  subscribe(listener: (notice: StoreNotice) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /**
   * Every change another instance makes to what a poll reads (a command queued, a run revoked)
   * is notified, and its notice is acted on as it arrives (the server's subscription), so a
   * notice needs no poll. The mark moves only when notices may have been lost: at each
   * reconnect of the listening connection (`missed`), and every FULL_READ_MS. While no
   * connection listens it is null: every poll reads. An authority with thousands of live runs,
   * idle or busy, then reads them all every 30 s, not every poll.
   */
  externalChangeMark(): Promise<number | null> {
    if (this.listener === null) return Promise.resolve(null);
    const at = this.now();
    if (at - this.fullReadAt >= FULL_READ_MS) {
      this.fullReadAt = at;
      this.mark++;
    }
    return Promise.resolve(this.mark);
  }
  /**
   * Keeps one connection listening on the channel. When it is lost (a database restart) it is
   * re-established, and the listeners hear `{ kind: "missed" }`: what was notified meanwhile is
   * gone, so they re-check what they serve.
   */
  async listen(): Promise<void> {
    const client = new pg.Client(this.config);
    client.on("notification", (message) => this.deliver(message.payload));
    client.on("error", () => undefined); // a lost connection also ends, which is handled below
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      void client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) return void (await client.end().catch(() => undefined));
    client.on("end", () => this.lost(client));
    this.listener = client;
  }
  private lost(client: pg.Client): void {
    if (this.closed || this.listener !== client) return;
    this.listener = null;
    this.log(`store ${this.location}: the notice connection was lost; reconnecting`);
    this.relisten(100);
  }
  private relisten(delayMs: number): void {
    this.reconnect = setTimeout(() => {
      this.reconnect = null;
      if (this.closed) return;
      this.listen().then(
        () => {
          this.log(`store ${this.location}: listening for notices again`);
          this.emit({ kind: "missed" });
        },
        () => this.relisten(Math.min(delayMs * 2, 2_000)),
      );
    }, delayMs);
    this.reconnect.unref();
  }
  private deliver(payload: string | undefined): void {
    let notice: (StoreNotice & { origin?: string }) | undefined;
    try {
      notice = JSON.parse(payload ?? "") as StoreNotice & { origin?: string };
    } catch {
      return this.log(`store ${this.location}: a notice on ${CHANNEL} is not JSON; ignored`);
    }
    if (notice.origin === this.origin) return; // this instance acted on its own change already
    const { origin: _origin, ...rest } = notice;
    this.emit(rest as StoreNotice);
  }
  private emit(notice: StoreNotice): void {
    if (notice.kind === "missed") this.mark++;
    for (const listener of this.listeners) listener(notice);
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
  }
}
