import { createServer, type Server } from "node:http";
import { isLoopback } from "../transport/loopback.js";
import { healthResponse, type HealthSource } from "./health.js";

export interface HealthServerHandle {
  /** http://HOST:PORT, the bound port. */
  url: string;
  close(): Promise<void>;
}

/**
 * /healthz, /readyz and /metrics on their own plain-HTTP address (--health-addr), for a
 * process without the API (a worker, prp-runnerd, an authority without --api). GET only;
 * every other path is 404. `warn` is told when the address is not loopback: the endpoints carry
 * no run data, so a private network address (a Kubernetes pod's) is allowed, but an operator
 * should know that anyone who reaches it can read the metrics.
 */
export async function startHealthServer(
  address: { host: string; port: number },
  source: HealthSource,
  warn: (message: string) => void,
): Promise<HealthServerHandle> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0]!;
    const answer = req.method === "GET" || req.method === "HEAD" ? healthResponse(path, source) : undefined;
    void Promise.resolve(answer).then(
      (r) => {
        res.writeHead(r?.status ?? 404, {
          "content-type": r?.contentType ?? "text/plain; charset=utf-8",
          "cache-control": "no-store",
        });
        res.end(req.method === "HEAD" ? undefined : (r?.body ?? "not found\n"));
      },
      (err: unknown) => {
        res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
        res.end(`health_failed: ${String((err as Error)?.message ?? err)}\n`);
      },
    );
  });
  // Probes are short: a socket that lingers is closed.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  if (!isLoopback(address.host))
    warn(
      `--health-addr ${address.host} is not loopback: anyone who reaches it can read /metrics; bind it to a private network`,
    );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(address.port, address.host, () => resolve());
  });
  const bound = server.address();
  if (bound === null || typeof bound === "string") throw new Error("the health server has no TCP address");
  const host = bound.family === "IPv6" ? `[${bound.address}]` : bound.address;
  return {
    url: `http://${host}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
