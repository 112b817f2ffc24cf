import { ConsoleServer } from "../../src/console/server.js";
import { StoreSource } from "../../src/console/store-source.js";
import { authority, committedRow, connect, event, unwrap, withRun, type Authority } from "../authority/support.js";

/** The run's id (the authority support's first run). */
export const RUN = "run_1";
/** Events of another type among the deltas, for a type filter. */
export const PHASES = [25_000, 50_000, 75_000];
/** The hostile event's text: ANSI escapes, HTML and a 1 MB string, as an agent may write. */
export const HOSTILE_TEXT = `\u001b[31mred\u001b[0m <img src=x onerror="window.pwned=1"><b>bold</b> ${"x".repeat(1024 * 1024)}`;

/**
 * A long run committed straight into a store (no runner: the console reads the store), served
 * by a console. Event `seq` is an item delta ("delta N"), a phase change at PHASES, or the
 * hostile text at `hostile`.
 */
export async function largeRun(dir: string, options: { hostile?: number } = {}) {
  const a: Authority = authority(dir);
  await withRun(a);
  const connection = (await connect(a)).connectionId;
  const eventAt = (seq: number): Record<string, unknown> => {
    if (PHASES.includes(seq))
      return event(seq, 1, { eventType: "runtime.phase.changed", payload: { phase: `phase ${seq}` } });
    if (seq === options.hostile) return event(seq, 1, { payload: { text: HOSTILE_TEXT } });
    return event(seq);
  };
  /** Commits events `from`..`to`, a thousand per transaction. */
  const commit = async (from: number, to: number) => {
    for (let start = from; start <= to; start += 1000) {
      const items = [];
      for (let seq = start; seq <= Math.min(to, start + 999); seq++)
        items.push({ runId: RUN, connectionId: connection, event: committedRow(eventAt(seq)) });
      for (const result of await a.store.commitEvents(items, Date.now())) unwrap(result);
    }
  };
  /** The console on this store (polling it every 50 ms). */
  const serve = () =>
    ConsoleServer.start({ source: new StoreSource(a.store, async () => {}), host: "127.0.0.1", port: 0, pollMs: 50 });
  return { store: a.store, commit, serve };
}
