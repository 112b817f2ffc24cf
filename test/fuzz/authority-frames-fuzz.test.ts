import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { WebSocket } from "ws";
import { decodeValue } from "../../src/contract/decode.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { handshakeEnvelope } from "../../src/transport/index.js";
import { completeRun, HandRunner, prpEvent, SecureAuthority } from "../security/support.js";
import { terminal } from "../contract/samples.js";
import { until } from "../support/until.js";
import { FUZZ_SEED, fuzz, hostileString, mutatedText, mutatedValue, randomBytes } from "./support.js";

/**
 * What the host was given for one run is a log it can trust, whatever a runner sent: every
 * event passes the codec, sequence numbers run 1, 2, 3… with no gap or repeat and end at the
 * authority's cursor, and at most one run.terminal, last.
 */
export function judgeCommitted(events: PrpEvent[], cursor: number): string[] {
  const problems: string[] = [];
  events.forEach((e, i) => {
    const decoded = decodeValue(e, { kind: "event" });
    if (!decoded.ok)
      problems.push(
        `committed event ${i + 1} fails the codec: ${decoded.error.code} at ${decoded.error.path}: ${decoded.error.message}`,
      );
    if (e.sourceSeq !== i + 1) problems.push(`committed event ${i + 1} has sourceSeq ${e.sourceSeq}`);
  });
  if (events.length !== cursor) problems.push(`${events.length} events given to the host, cursor at ${cursor}`);
  const terminal = events.findIndex((e) => e.eventType === "run.terminal");
  if (terminal >= 0 && terminal !== events.length - 1)
    problems.push(`${events.length - 1 - terminal} event(s) after run.terminal`);
  return problems;
}

type Frame =
  | { kind: "event" }
  | { kind: "terminal" }
  | { kind: "mutated-value"; pick: number }
  | { kind: "mutated-text"; pick: number }
  | { kind: "unsealed"; text: string }
  | { kind: "binary"; bytes: Uint8Array };
const frame: fc.Arbitrary<Frame> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: "event" } as Frame) },
  { weight: 1, arbitrary: fc.constant({ kind: "terminal" } as Frame) },
  { weight: 3, arbitrary: fc.nat().map((pick) => ({ kind: "mutated-value", pick }) as Frame) },
  { weight: 2, arbitrary: fc.nat().map((pick) => ({ kind: "mutated-text", pick }) as Frame) },
  { weight: 1, arbitrary: fc.oneof(hostileString, fc.json()).map((text) => ({ kind: "unsealed", text }) as Frame) },
  { weight: 1, arbitrary: randomBytes.map((bytes) => ({ kind: "binary", bytes }) as Frame) },
);

describe(`authority frame handling fuzz (seed ${FUZZ_SEED})`, () => {
  let authority: SecureAuthority;
  before(async () => (authority = await SecureAuthority.start()));
  after(async () => authority.close());

  it("before authentication: random and mutated first messages are refused or answered, and the server goes on", async () => {
    const hello = handshakeEnvelope("auth_hello", { token: "x" });
    const first = fc.oneof(
      fc.oneof(hostileString, fc.json()),
      mutatedText(hello as never),
      mutatedValue(hello as never).map((v) => JSON.stringify(v)),
      randomBytes.map((b) => Buffer.from(b)),
    );
    await fuzz(
      "authority pre-auth",
      fc.asyncProperty(first, async (message) => {
        const run = await authority.newRun();
        const ws = new WebSocket(authority.url(run.runId), { perMessageDeflate: false });
        ws.on("error", () => {});
        const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
        await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
        const answered = new Promise<void>((resolve) => ws.once("message", () => resolve()));
        ws.send(message);
        // Refused (closed) or answered (a challenge to a hello that is still well formed); either way, no crash.
        await Promise.race([closed, answered]);
        ws.close();
        await closed;
      }),
      60,
      60_000,
    );
  });

  it("after authentication: valid, mutated, unsealed and binary frames leave a log the host can trust", async () => {
    await fuzz(
      "authority frames",
      fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 10 }), async (frames) => {
        const run = await authority.newRun();
        const runner = await HandRunner.dial(authority.url(run.runId), run);
        await runner.authenticate({ kind: "bootstrap", token: await authority.ticket(run.runId, 30_000) });
        let seq = 0;
        for (const f of frames) {
          if (runner.ws.readyState !== WebSocket.OPEN) break;
          if (f.kind === "event") runner.sendEvent(++seq);
          else if (f.kind === "terminal")
            runner.ws.send(
              runner.seal(
                runner.envelopeText("event", {
                  event: prpEvent(run, ++seq, { eventType: "run.terminal", priority: 0, payload: terminal() }),
                }),
              ),
            );
          else if (f.kind === "unsealed") runner.ws.send(f.text);
          else if (f.kind === "binary") runner.ws.send(Buffer.from(f.bytes));
          else {
            const envelope = JSON.parse(runner.envelopeText("event", { event: prpEvent(run, seq + 1) }));
            const arbitrary =
              f.kind === "mutated-value" ? mutatedValue(envelope).map((v) => JSON.stringify(v)) : mutatedText(envelope);
            runner.ws.send(runner.seal(fc.sample(arbitrary, { seed: f.pick, numRuns: 1 })[0]!));
          }
        }
        runner.close();
        await runner.closed();
        await until(() => authority.server.activeRunnerConnectionCount(run.runId) === 0, "the connection to end");
        // The cursor and the host's record settle together; wait until they agree, then judge.
        const committed = () => authority.committed.get(run.runId) ?? [];
        await until(
          async () => (await authority.snapshot(run.runId)).ackedSourceSeq === committed().length,
          "the host's record to reach the cursor",
          5_000,
        ).catch(() => {});
        const problems = judgeCommitted(committed(), (await authority.snapshot(run.runId)).ackedSourceSeq);
        assert.deepEqual(problems, []);
      }),
      80,
      90_000,
    );
  });

  it("afterwards the same authority still runs a whole run with a real runner", async () => {
    const run = await authority.newRun();
    const { outcome, events } = await completeRun(authority, run, await authority.ticket(run.runId));
    assert.equal(outcome.code, 0);
    assert.deepEqual(judgeCommitted(events, (await authority.snapshot(run.runId)).ackedSourceSeq), []);
    assert.equal((events.at(-1)!.payload as { runTerminalState: string }).runTerminalState, "succeeded");
  });

  it("the judge fails a log with an event deleted, repeated, altered, past the cursor, or after the terminal", async () => {
    const run = await authority.newRun();
    const { events } = await completeRun(authority, run, await authority.ticket(run.runId));
    const cursor = events.length;
    assert.deepEqual(judgeCommitted(events, cursor), []);
    const altered = events.map((e, i) => (i === 1 ? { ...e, priority: 9 } : e)) as PrpEvent[];
    const cases: [string, PrpEvent[], number, RegExp][] = [
      ["deleted", events.filter((_, i) => i !== 1), cursor, /sourceSeq|cursor/],
      ["repeated", [...events.slice(0, 2), events[1]!, ...events.slice(2)], cursor, /sourceSeq/],
      ["altered", altered, cursor, /fails the codec/],
      ["cursor short", events, cursor - 1, /cursor at/],
      ["after the terminal", [...events, { ...events[0]!, sourceSeq: cursor + 1 }], cursor + 1, /after run.terminal/],
    ];
    for (const [what, log, at, expected] of cases) assert.match(judgeCommitted(log, at).join("; "), expected, what);
  });
});
