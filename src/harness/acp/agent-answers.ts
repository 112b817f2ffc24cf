/** A request the agent waits on: how to answer it, and the answer that cancels it. */
interface Waiting {
  resolve(response: unknown): void;
  cancelled: unknown;
}

const key = (id: unknown): string => JSON.stringify(id ?? null);

/**
 * The agent's requests (permissions, questions) that the SDK handed to their handlers and that
 * wait for an answer, by the provider's request id, and the answers a controller gave before
 * the SDK handed the request over (the tap projects a request first).
 */
export class AgentAnswers {
  private readonly waiting = new Map<string, Waiting>();
  private readonly early = new Map<string, unknown>();

  /** How many requests wait for an answer. */
  get size(): number {
    return this.waiting.size;
  }

  /** Whether this request was answered before its handler had it: it takes no other answer. */
  answeredEarly(providerId: unknown): boolean {
    return this.early.has(key(providerId));
  }

  /**
   * The handler's answer: one given early; `cancelled` at once when `refuse()` says so;
   * otherwise it waits, and `waiting()` runs once it does.
   */
  wait<R>(requestId: unknown, cancelled: R, refuse: () => boolean, waiting: () => void): Promise<R> {
    return new Promise<R>((resolve) => {
      const early = this.early.get(key(requestId));
      if (early) {
        this.early.delete(key(requestId));
        return resolve(early as R);
      }
      if (refuse()) return resolve(cancelled);
      this.waiting.set(key(requestId), { resolve: resolve as (r: unknown) => void, cancelled });
      waiting();
    });
  }

  /** Hands `response` to the request's handler, or keeps it for the handler to come; true when handed. */
  deliver(providerId: unknown, response: unknown): boolean {
    const waiting = this.waiting.get(key(providerId));
    if (!waiting) {
      this.early.set(key(providerId), response);
      return false;
    }
    this.waiting.delete(key(providerId));
    waiting.resolve(response);
    return true;
  }

  /** Every request waiting is answered cancelled. */
  cancelAll(): void {
    for (const [k, w] of this.waiting) {
      this.waiting.delete(k);
      w.resolve(w.cancelled);
    }
  }
}
