import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import ts from "typescript";
import { packageRoot } from "../../src/contract/package-root.js";
import { until } from "../support/until.js";

const TOKEN = "c".repeat(64);

interface LiveStream {
  addEventListener(type: string, listener: (event: { data: string }) => void): void;
  onerror: ((event: Event) => void) | null;
  close(): void;
}

/**
 * The page's stream reader (console/web/src/stream.ts and token.ts) compiled as they are and
 * loaded in Node, with just enough of a browser for them: the reader is the page's own code,
 * driven against a server that cuts its stream and checks what the reader sends back.
 */
async function loadPageStream(dir: string, pageUrl: string): Promise<(url: string) => LiveStream> {
  for (const name of ["stream", "token"]) {
    const source = readFileSync(join(packageRoot(), "console", "web", "src", `${name}.ts`), "utf8");
    const compiled = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    // The page's one dependency, which Vite bundles, resolved from this package for a file outside it.
    writeFileSync(
      join(dir, `${name}.js`),
      compiled.replace('from "eventsource-parser"', `from "${import.meta.resolve("eventsource-parser")}"`),
    );
  }
  writeFileSync(join(dir, "package.json"), '{"type":"module"}');
  const storage = new Map<string, string>();
  const replaced: string[] = [];
  Object.assign(globalThis, {
    location: new URL(pageUrl),
    sessionStorage: {
      getItem: (k: string) => storage.get(k) ?? null,
      setItem: (k: string, v: string) => void storage.set(k, v),
    },
    history: { state: null, replaceState: (_: unknown, __: string, url: string) => void replaced.push(url) },
  });
  const module = (await import(join(dir, "stream.js"))) as { openStream: (url: string) => LiveStream };
  assert.deepEqual(replaced, [pageUrl.replace(/\?token=\w+/, "")], "the token is taken out of the address bar");
  return (url) => module.openStream(url);
}

describe("the page's event-stream reader (fetch, not EventSource)", () => {
  let dir: string;
  let server: Server;
  let base: string;
  const requests: IncomingHttpHeaders[] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "prp-page-stream-"));
    // First connection: two events, written a byte at a time, then the stream ends. Second: one more.
    server = createServer((req, res) => {
      requests.push(req.headers);
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (requests.length === 1) {
        const text =
          'retry: 20\n\n: a comment\nid: 1\nevent: prp\ndata: {"n":1}\n\nid: 2\nevent: prp\ndata: {"n":\ndata: 2}\n\n';
        let i = 0;
        const next = () => (i < text.length ? res.write(text[i++], next) : res.end());
        next();
      } else res.end('id: 3\nevent: prp\ndata: {"n":3}\n\nevent: view\ndata: "last"\n\n');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    rmSync(dir, { recursive: true, force: true });
  });

  it("parses events split anywhere, sends the token, and resumes with Last-Event-ID after the stream ends", async () => {
    const openStream = await loadPageStream(dir, `${base}/?token=${TOKEN}#/run/x`);
    const stream = openStream(`${base}/v1/runs/x/events?after=0`);
    const seen: unknown[] = [];
    let errors = 0;
    stream.addEventListener("prp", (e) => seen.push(JSON.parse(e.data)));
    stream.addEventListener("view", (e) => seen.push(JSON.parse(e.data)));
    stream.onerror = () => errors++;
    try {
      await until(
        () => seen.length === 4,
        () => `four events (got ${JSON.stringify(seen)})`,
      );
    } finally {
      stream.close();
    }
    assert.deepEqual(seen, [{ n: 1 }, { n: 2 }, { n: 3 }, "last"]);
    assert.ok(errors >= 1, "the end of the first stream was reported");
    assert.equal(requests[0]!.authorization, `Bearer ${TOKEN}`);
    assert.equal(requests[0]!["last-event-id"], undefined);
    assert.equal(requests[1]!.authorization, `Bearer ${TOKEN}`);
    assert.equal(requests[1]!["last-event-id"], "2", "resumes after the last id seen");
  });
});
