import type { Registry } from "prom-client";

/** One readiness condition: null when it holds, else what a person should look at. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<string | null>;
}

/** What a process serves on /healthz, /readyz and /metrics. */
export interface HealthSource {
  registry: Registry;
  readiness: readonly ReadinessCheck[];
}

export interface HealthResponse {
  status: number;
  contentType: string;
  body: string;
}

/** The paths served; anything else is not ours to answer. */
export const HEALTH_PATHS = ["/healthz", "/readyz", "/metrics"] as const;

/** A check that has not answered in this long counts as failing: a hung store is not ready. */
const CHECK_TIMEOUT_MS = 2_000;

const json = (status: number, value: unknown): HealthResponse => ({
  status,
  contentType: "application/json; charset=utf-8",
  body: JSON.stringify(value),
});

/**
 * The answer to one of HEALTH_PATHS, shared by the API server (fastify) and the small
 * --health-addr server (node:http) so both say the same. /healthz: the process answers.
 * /readyz: every readiness check holds, else 503 naming each that does not. /metrics: the
 * Prometheus text format. None carries run data, which is why they need no API token.
 */
export async function healthResponse(path: string, source: HealthSource): Promise<HealthResponse | undefined> {
  if (path === "/healthz") return json(200, { status: "alive" });
  if (path === "/readyz") {
    const failing = (await Promise.all(source.readiness.map(runCheck))).filter((f) => f !== null);
    return failing.length === 0 ? json(200, { status: "ready" }) : json(503, { status: "not_ready", failing });
  }
  if (path === "/metrics")
    return { status: 200, contentType: source.registry.contentType, body: await source.registry.metrics() };
  return undefined;
}

async function runCheck(c: ReadinessCheck): Promise<{ check: string; message: string } | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${CHECK_TIMEOUT_MS} ms`), CHECK_TIMEOUT_MS);
  });
  try {
    const message = await Promise.race([
      c.check().catch((err: unknown) => String((err as Error)?.message ?? err)),
      timeout,
    ]);
    return message === null ? null : { check: c.name, message };
  } finally {
    clearTimeout(timer);
  }
}
