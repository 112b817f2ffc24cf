import { ApiServer, type ApiServerHandle, type ApiServerOptions } from "../../src/api/server.js";
import { newApiToken } from "../../src/api/tokens.js";
import { Credentials } from "../../src/authority/credentials.js";
import { EventIngest } from "../../src/authority/ingest.js";
import type { ApiScope, AuthorityStore } from "../../src/authority/store.js";
import { event as sampleEvent, terminal } from "../contract/samples.js";
import { unwrap } from "../authority/support.js";
import { openApiDocument } from "../../src/contract/api/openapi.js";
import { pathTemplateOf, responseChecker } from "../support/openapi-responses.js";

/** Every JSON answer a test gets is checked against the served OpenAPI document. */
const document = openApiDocument();
export const checker = responseChecker(document);
/** A route the document lacks (the bad-input table asks one) has nothing to be checked against. */
const documented = (path: string) => pathTemplateOf(document.paths as Record<string, unknown>, path) !== undefined;

/** The API over `store` on 127.0.0.1, and one token per scope. */
export interface TestApi {
  api: ApiServerHandle;
  store: AuthorityStore;
  tokens: Record<ApiScope, string>;
  /** `fetch` of `path` with the token of `scope` (or none), a JSON body when given. */
  call(
    method: string,
    path: string,
    options?: {
      scope?: ApiScope | null;
      token?: string;
      body?: unknown;
      raw?: string;
      headers?: Record<string, string>;
    },
  ): Promise<Answer>;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export async function startApi(store: AuthorityStore, options: Partial<ApiServerOptions> = {}): Promise<TestApi> {
  const api = await ApiServer.start({
    store,
    host: "127.0.0.1",
    port: 0,
    runnerConnectUrl: "ws://127.0.0.1:1",
    ...options,
  });
  const tokens = {} as Record<ApiScope, string>;
  for (const scope of ["read", "operate", "admin"] as const) {
    const t = newApiToken(scope, { nowMs: Date.now(), label: `test ${scope}` });
    unwrap(await store.insertApiToken(t.row));
    tokens[scope] = t.token;
  }
  return {
    api,
    store,
    tokens,
    call: async (method, path, o = {}) => {
      const headers: Record<string, string> = { ...o.headers };
      const token = o.token ?? (o.scope === null ? undefined : tokens[o.scope ?? "admin"]);
      if (token !== undefined) headers.authorization = `Bearer ${token}`;
      let body: string | undefined = o.raw;
      if (o.body !== undefined) body = JSON.stringify(o.body);
      if (body !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json";
      const res = await fetch(`${api.url}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        // Not JSON (an SSE body, an empty answer): the test reads `text`.
      }
      if (
        json !== undefined &&
        path !== "/v1/openapi.json" &&
        documented(path) &&
        res.headers.get("content-type")?.startsWith("application/json")
      )
        checker.checkResponse(method, path, res.status, json);
      return { status: res.status, headers: res.headers, text, json };
    },
  };
}

/** A runner of `runId` as the authority sees one: connected with a ticket, its events ingested through the codec. */
export async function fakeRunner(store: AuthorityStore, runId: string, protocolVersion: number) {
  const credentials = unwrap(Credentials.create({ store }));
  const ticket = unwrap(await credentials.issueBootstrapTicket(runId));
  const record = (await credentials.lookupCredential(ticket.credentialId))!;
  const auth = unwrap(await credentials.reauthorize({ record, selectedVersion: protocolVersion, proofVerified: true }));
  const ingest = new EventIngest({ store });
  const run = (await store.run(runId))!;
  const ids = run.identity;
  let seq = 0;
  const emit = async (overrides: Record<string, unknown> = {}) => {
    seq++;
    unwrap(
      await ingest.ingest(
        runId,
        auth.connectionId,
        sampleEvent(protocolVersion as 1, {
          sourceEventId: `event_${ids.runnerInstanceId}_${String(seq).padStart(16, "0")}`,
          sourceSeq: seq,
          sourceInstanceId: ids.runnerInstanceId,
          runId,
          normalizedSessionId: ids.normalizedSessionId,
          turnId: ids.turnId,
          itemId: ids.itemId,
          payload: { text: `delta ${seq}` },
          ...overrides,
        }),
      ),
    );
    return seq;
  };
  return {
    emit,
    terminal: () => emit({ eventType: "run.terminal", priority: 0, payload: terminal() }),
  };
}

/** A v1 run created over the API with the fake harness: its id. */
export async function createRun(t: TestApi, extra: Record<string, unknown> = {}, headers?: Record<string, string>) {
  const r = await t.call("POST", "/v1/runs", {
    scope: "operate",
    body: { agent: { kind: "fake", script: "happy-path" }, protocolVersion: 1, ...extra },
    ...(headers ? { headers } : {}),
  });
  if (r.status !== 201) throw new Error(`create run: ${r.status} ${r.text}`);
  return r.json.run.runId as string;
}

/**
 * The judge of a stream: the seqs a follower received must be exactly the store's eventLog, each
 * once, in order. Returns what is wrong, or null.
 */
export function judgeStream(
  received: readonly { seq: number; data: string }[],
  log: readonly { sourceSeq: number; envelope: string }[],
): string | null {
  if (received.length !== log.length) return `received ${received.length} events; the store has ${log.length}`;
  for (let i = 0; i < log.length; i++) {
    const r = received[i]!;
    const l = log[i]!;
    if (r.seq !== l.sourceSeq) return `event ${i + 1}: seq ${r.seq}, the store's is ${l.sourceSeq}`;
    if (r.data !== l.envelope) return `event ${l.sourceSeq}: the data is not the committed envelope`;
  }
  return null;
}

/** Parses SSE text into its events (id, event, data). */
export function parseSse(text: string): Array<{ id: string | null; event: string; data: string }> {
  const out: Array<{ id: string | null; event: string; data: string }> = [];
  for (const block of text.split("\n\n")) {
    if (block === "" || block.startsWith(":")) continue;
    let id: string | null = null;
    let ev = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const [field, ...rest] = line.split(":");
      const value = rest.join(":").replace(/^ /, "");
      if (field === "id") id = value;
      else if (field === "event") ev = value;
      else if (field === "data") data.push(value);
    }
    if (data.length > 0 || ev !== "message") out.push({ id, event: ev, data: data.join("\n") });
  }
  return out;
}
