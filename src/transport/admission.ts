import type { Socket } from "node:net";
import { HANDSHAKE_DEADLINE_MS, MAX_UNAUTHENTICATED, MAX_UNAUTHENTICATED_PER_ADDRESS } from "./limits.js";
import { systemTimers, type Timers } from "./timers.js";

/** How many connections may be on their way in, and for how long (defaults in limits.ts). */
export interface AdmissionOptions {
  /** Sockets from one remote address not yet authenticated; the next one is refused 429. */
  maxUnauthenticatedPerAddress?: number;
  /** Sockets not yet authenticated, from anywhere; the next one is refused 503. */
  maxUnauthenticated?: number;
  /** From the TCP accept to the welcome: past it, the socket is destroyed. */
  handshakeDeadlineMs?: number;
  /** The deadline's clock; tests inject their own. */
  timers?: Timers;
}

/** What the gate did, since the server started. */
export interface AdmissionCounts {
  /** Sockets accepted and not yet authenticated, now. */
  unauthenticated: number;
  /** Sockets refused at a cap. */
  refused: number;
  /** Sockets destroyed at the handshake deadline. */
  timedOut: number;
}

export type AdmissionRefusal = "429 Too Many Requests" | "503 Service Unavailable";

/**
 * The unauthenticated sockets of one server: each counts, per remote address and in total,
 * from its TCP accept until its handshake ends in a welcome or the socket closes, and each has
 * until the deadline to get there. An unauthenticated socket costs the server memory and a
 * handshake's work, and nothing about it is known yet: this bounds what a peer can hold.
 */
export class AdmissionGate {
  private readonly perAddress = new Map<string, number>();
  private readonly pending = new Map<Socket, { address: string; cancel: () => void }>();
  private refused = 0;
  private timedOut = 0;
  private readonly maxPerAddress: number;
  private readonly maxTotal: number;
  private readonly deadlineMs: number;
  private readonly timers: Timers;

  constructor(options: AdmissionOptions = {}) {
    this.maxPerAddress = options.maxUnauthenticatedPerAddress ?? MAX_UNAUTHENTICATED_PER_ADDRESS;
    this.maxTotal = options.maxUnauthenticated ?? MAX_UNAUTHENTICATED;
    this.deadlineMs = options.handshakeDeadlineMs ?? HANDSHAKE_DEADLINE_MS;
    this.timers = options.timers ?? systemTimers;
  }

  /** A new socket: counted and given its deadline, or the refusal to answer it with. */
  admit(socket: Socket): AdmissionRefusal | null {
    const address = socket.remoteAddress ?? "";
    const fromAddress = this.perAddress.get(address) ?? 0;
    const refusal =
      fromAddress >= this.maxPerAddress
        ? "429 Too Many Requests"
        : this.pending.size >= this.maxTotal
          ? "503 Service Unavailable"
          : null;
    if (refusal) {
      this.refused++;
      return refusal;
    }
    this.perAddress.set(address, fromAddress + 1);
    const cancel = this.timers.after(this.deadlineMs, () => {
      if (!this.pending.has(socket)) return;
      this.timedOut++;
      socket.destroy();
    });
    this.pending.set(socket, { address, cancel });
    socket.once("close", () => this.release(socket));
    return null;
  }

  /** The socket's handshake ended in a welcome: it no longer counts and has no deadline. */
  authenticated(socket: Socket): void {
    this.release(socket);
  }

  counts(): AdmissionCounts {
    return { unauthenticated: this.pending.size, refused: this.refused, timedOut: this.timedOut };
  }

  private release(socket: Socket): void {
    const entry = this.pending.get(socket);
    if (!entry) return;
    this.pending.delete(socket);
    entry.cancel();
    const left = (this.perAddress.get(entry.address) ?? 1) - 1;
    if (left === 0) this.perAddress.delete(entry.address);
    else this.perAddress.set(entry.address, left);
  }
}
