import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PrpApiError, PrpClient } from "../../src/client/index.js";
import type { CommittedEvent } from "../../src/contract/api/generated/types.js";
import { checkResponse, checkSchema } from "../support/openapi-responses.js";
import { startTestPostgres, type TestPostgres } from "../support/postgres.js";
import { killAll, spawnRunnerd, startApiDaemon, type Child, type Daemon } from "../cli/authority-processes.js";
import { runPrp } from "../cli/run-cli.js";

/** A fetch that holds every JSON answer the client receives to the OpenAPI document. */
const checkedFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  if ((response.headers.get("content-type") ?? "").startsWith("application/json")) {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    checkResponse(init?.method ?? "GET", url.pathname, response.status, await response.clone().json());
  }
  return response;
};

/** The API's pages of a run, every event (the judge's independent record is the daemon's store, read by prp events). */
async function allEvents(client: PrpClient, runId: string): Promise<CommittedEvent[]> {
  const out: CommittedEvent[] = [];
  for (let after = 0; ;) {
    const page = await client.events(runId, { after, limit: 7 });
    out.push(...page.events);
    if (page.ended || page.events.length === 0) return out;
    after = page.next;
  }
}

/** Every event exactly once, in order, equal to the record it is judged against; the first difference, or null. */
export function sameEvents(got: readonly CommittedEvent[], record: readonly string[]): string | null {
  if (got.length !== record.length) return `${got.length} events, the record has ${record.length}`;
  for (const [i, e] of got.entries()) {
    if (e.seq !== i + 1) return `event ${i + 1} has seq ${e.seq}`;
    if (JSON.stringify(e.event) !== record[i]) return `event ${i + 1} differs from the record`;
  }
  return null;
}

for (const database of ["sqlite", "postgres"] as const) {
  describe(`the shipped client against prp authority serve --api on ${database}`, () => {
    let dir: string;
    let postgres: TestPostgres | undefined;
    let store: string[];
    const children: Array<Daemon | Child> = [];
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), `prp-client-e2e-${database}-`));
      const key = join(dir, "secrets", "authority-key");
      assert.equal(runPrp(["authority", "key", "--out", key]).status, 0);
      if (database === "postgres") postgres = await startTestPostgres();
      const location = postgres ? await postgres.database() : `sqlite:${join(dir, "store")}`;
      store = ["--store", location, "--server-key-file", key];
    });
    after(async () => {
      await killAll(children);
      await postgres?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("creates, lists, reads, tickets, follows across a cut, and refuses typed; every answer as the document says", async () => {
      const tokens: Record<string, string> = {};
      for (const scope of ["read", "admin"]) {
        const out = join(dir, `${scope}-token`);
        const made = runPrp(["authority", "token", "create", ...store, "--scope", scope, "--out", out]);
        assert.equal(made.status, 0, made.stderr);
        tokens[scope] = readFileSync(out, "utf8").trim();
      }
      const { daemon, apiUrl: baseUrl } = await startApiDaemon([
        ...store,
        "--listen",
        "127.0.0.1:0",
        "--poll-ms",
        "50",
      ]);
      children.push(daemon);
      const admin = new PrpClient({ baseUrl, token: tokens.admin!, fetch: checkedFetch });
      const reader = new PrpClient({ baseUrl, token: tokens.read!, fetch: checkedFetch });

      const spec = {
        agent: { kind: "fake" as const, script: "happy-path" },
        prompt: "Play the happy-path script.",
        labels: { team: "client-e2e" },
      };
      const created = await admin.createRun(spec, { idempotencyKey: "e2e-1" });
      const again = await admin.createRun(spec, { idempotencyKey: "e2e-1" });
      const runId = created.run.runId;
      assert.equal(again.run.runId, runId, "the same key finds the same run");
      assert.deepEqual(
        created.commands.map((c) => c.type),
        ["run.prepare", "session.open", "turn.start"],
      );
      await assert.rejects(
        admin.createRun({ ...spec, prompt: "another" }, { idempotencyKey: "e2e-1" }),
        (e: PrpApiError) => e.status === 422 && e.code === "idempotency_key_reused",
      );
      await assert.rejects(
        reader.createRun(spec),
        (e: PrpApiError) => e.status === 403 && e.code === "scope_insufficient",
      );
      const other = await admin.createRun({ ...spec, labels: { team: "other" } });
      const listed = [];
      for await (const r of reader.allRuns({ labels: { team: "client-e2e" }, limit: 1 })) listed.push(r.runId);
      assert.deepEqual(listed, [runId], "the label filter, page by page");
      assert.equal((await reader.listRuns({ state: "queued" })).runs.length, 2, "every API-created run is queued");

      // Follow from the start, cut the connection after the fifth event, then resume from there.
      const seen: CommittedEvent[] = [];
      const cut = new AbortController();
      const first = (async () => {
        for await (const e of reader.follow(runId, { signal: cut.signal })) {
          seen.push(e);
          if (seen.length === 5) cut.abort();
        }
      })();

      const ticket = await admin.createTicket(runId, { stateDir: join(dir, `runner-${runId}`) });
      const runner = spawnRunnerd([...ticket.runnerArgs, "--delay-ms", "0"], ticket.ticket, dir);
      children.push(runner);
      await first;
      assert.equal(seen.length, 5, "the cut came after the fifth event");
      for await (const e of reader.follow(runId, { after: seen.at(-1)!.seq })) {
        checkSchema("CommittedEvent", e);
        seen.push(e);
      }
      assert.equal(await runner.exited(), 0, runner.stderr());

      const record = runPrp(["events", "--run", runId, "--json", ...store]);
      assert.equal(record.status, 0, record.stderr);
      const stored = record.stdout.trim().split("\n");
      assert.equal(sameEvents(seen, stored), null, "followed across the cut: each event once, as stored");
      assert.equal(sameEvents(await allEvents(reader, runId), stored), null, "paged: each event once, as stored");

      const run = await reader.getRun(runId);
      assert.equal(run.run.state, "ended");
      assert.equal((run.terminal as { runTerminalState?: string } | null)?.runTerminalState, "succeeded");
      await assert.rejects(
        admin.sendCommand(runId, { type: "run.cancel", payload: {} }),
        (e: PrpApiError) => e.status === 409 && e.code === "run_ended",
      );
      const cancel = await admin.sendCommand(
        other.run.runId,
        { type: "run.cancel", payload: {} },
        { idempotencyKey: "c1" },
      );
      const repeat = await admin.sendCommand(
        other.run.runId,
        { type: "run.cancel", payload: {} },
        { idempotencyKey: "c1" },
      );
      assert.equal(repeat.commandId, cancel.commandId);
      assert.equal(repeat.created, false);
      await assert.rejects(
        reader.getRun("run_unknown"),
        (e: PrpApiError) => e.status === 404 && e.code === "unknown_run",
      );

      daemon.kill("SIGTERM");
      assert.equal(await daemon.exited(), 0, daemon.stderr());
    });

    it("the judge of this test finds a missing, a repeated and an altered event", () => {
      const e = (seq: number, text: string): CommittedEvent => ({ seq, event: JSON.parse(text) });
      const record = ['{"n":1}', '{"n":2}', '{"n":3}'];
      const got = record.map((t, i) => e(i + 1, t));
      assert.equal(sameEvents(got, record), null);
      assert.match(sameEvents(got.slice(0, 2), record)!, /2 events/);
      assert.match(sameEvents([got[0]!, got[0]!, got[2]!], record)!, /seq 1/);
      assert.match(sameEvents([got[0]!, e(2, '{"n":9}'), got[2]!], record)!, /differs/);
    });
  });
}
