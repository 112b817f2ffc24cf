import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fromOtlpJson, type SeenSpan } from "./span-tree.js";

/** An OTLP/HTTP trace receiver on 127.0.0.1: every span POSTed to /v1/traces as JSON, read as the wire has it. */
export interface OtlpReceiver {
  endpoint: string;
  spans(): SeenSpan[];
  /** Requests that were not a JSON POST to /v1/traces (an exporter sending protobuf would show here). */
  refused(): string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: SeenSpan[] = [];
  const refused: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const type = req.headers["content-type"] ?? "";
      if (req.method !== "POST" || req.url !== "/v1/traces" || !type.startsWith("application/json")) {
        refused.push(`${req.method} ${req.url} ${type}`);
        res.writeHead(400).end();
        return;
      }
      spans.push(...fromOtlpJson(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    refused: () => [...refused],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
