import { CommandQueue } from "../authority/commands.js";
import type { AuthorityStore } from "../authority/store.js";
import type { PrpEvent } from "../contract/kinds.js";
import type { ApiResult, CommandReceipt } from "./api-types.js";
import type { RunSource } from "./run-source.js";

/** Rows read from the run log per query: a long run is read in pages. */
const PAGE = 500;

/** `code: message` of a stored command result (`{commandId, status, result: {code, message}}`). */
function resultReason(stored: string | null): string | undefined {
  const result = (JSON.parse(stored ?? "{}") as { result?: { code?: unknown; message?: unknown; reason?: unknown } })
    .result;
  const words = [result?.code, result?.message ?? result?.reason].filter((w) => typeof w === "string" && w !== "");
  return words.length > 0 ? words.join(": ") : undefined;
}

/**
 * The runs of an authority store, read beside a live daemon (as `prp events` and the admin
 * commands do); commands are queued in the store, and the daemon delivers them to the runner.
 */
export class StoreSource implements RunSource {
  readonly live = true;
  private readonly queueOf: CommandQueue;

  constructor(
    private readonly store: AuthorityStore,
    private readonly closeStore: () => Promise<void>,
  ) {
    this.queueOf = new CommandQueue({ store });
  }

  runIds(): Promise<string[]> {
    return this.store.runIds();
  }

  async eventsAfter(runId: string, after: number, limit: number): Promise<PrpEvent[] | undefined> {
    if (after === 0 && !(await this.store.runCursor(runId))) return undefined;
    const out: PrpEvent[] = [];
    for (;;) {
      const page = Math.min(PAGE, limit - out.length);
      const rows = await this.store.eventLog(runId, after + out.length, page);
      // Committed events passed the contract codec on their way in.
      for (const row of rows) out.push(JSON.parse(row.envelope) as PrpEvent);
      if (rows.length < page || out.length >= limit) return out;
    }
  }

  origin() {
    return {};
  }

  async commands(runId: string): Promise<CommandReceipt[]> {
    return (await this.store.commands(runId)).map((c) => {
      const requestId =
        c.type === "request.resolve" ? (JSON.parse(c.payload) as { requestId?: unknown }).requestId : undefined;
      const reason = c.status !== null && c.status !== "completed" ? resultReason(c.result) : undefined;
      return {
        commandId: c.commandId,
        controllerSeq: c.controllerSeq,
        type: c.type,
        status: c.status,
        delivered: c.deliveryCount > 0,
        ...(typeof requestId === "string" ? { requestId } : {}),
        ...(reason ? { reason } : {}),
      };
    });
  }

  async queue(runId: string, type: string, payload: Record<string, unknown>): Promise<ApiResult<CommandReceipt>> {
    const queued = await this.queueOf.queueCommand(runId, type, payload);
    if (!queued.ok) return queued;
    const { commandId, controllerSeq, created } = queued.value;
    const requestId =
      type === "request.resolve" && typeof payload.requestId === "string" ? { requestId: payload.requestId } : {};
    return { ok: true, value: { commandId, controllerSeq, type, ...requestId, created, status: null } };
  }

  close(): Promise<void> {
    return this.closeStore();
  }
}
