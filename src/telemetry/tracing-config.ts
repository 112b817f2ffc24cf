/** Whether this process sends traces, and where, as the standard OTEL_* variables say. */
export type TracingChoice =
  { on: false; warning?: string } | { on: true; exporter: "otlp" | "console"; serviceName: string };

const truthy = (value: string | undefined) => value?.trim().toLowerCase() === "true";
const set = (value: string | undefined) => value !== undefined && value.trim() !== "";

/**
 * Tracing is off unless asked for: on only when OTEL_TRACES_EXPORTER names `otlp` or `console`,
 * or (with OTEL_TRACES_EXPORTER unset) an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none
 * always turn it off. An exporter this build does not have is a warning, and tracing stays off.
 */
export function tracingChoice(env: NodeJS.ProcessEnv, defaultServiceName: string): TracingChoice {
  if (truthy(env.OTEL_SDK_DISABLED)) return { on: false };
  const serviceName = set(env.OTEL_SERVICE_NAME) ? env.OTEL_SERVICE_NAME!.trim() : defaultServiceName;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === undefined || exporter === "")
    return set(env.OTEL_EXPORTER_OTLP_ENDPOINT) || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
      ? { on: true, exporter: "otlp", serviceName }
      : { on: false };
  if (exporter === "none") return { on: false };
  if (exporter === "otlp" || exporter === "console") return { on: true, exporter, serviceName };
  return {
    on: false,
    warning: `OTEL_TRACES_EXPORTER=${JSON.stringify(exporter.slice(0, 40))} is not one this build has (otlp, console, none): tracing stays off`,
  };
}

/** The OTEL_* variables a worker hands on to the runners it starts, so that they trace as it does. */
export function otelVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] => entry[0].startsWith("OTEL_") && entry[1] !== undefined,
    ),
  );
}
