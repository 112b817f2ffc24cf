import { tracingChoice } from "./tracing-config.js";

/** This process's tracing: `shutdown` sends what is still buffered (call it on every exit path). */
export interface Tracing {
  readonly on: boolean;
  shutdown(): Promise<void>;
}

const OFF: Tracing = { on: false, shutdown: async () => {} };

/**
 * Starts tracing when the OTEL_* variables ask for it (tracingChoice): a NodeTracerProvider
 * with a batch processor and the OTLP/HTTP (JSON) or console exporter, registered as the
 * global provider with the W3C trace-context propagator. Off, nothing of the SDK is loaded and
 * @opentelemetry/api's no-op tracer serves every span: no cost on the hot path.
 */
export async function startTracing(
  defaultServiceName: string,
  env: NodeJS.ProcessEnv = process.env,
  log: (text: string) => void = () => {},
): Promise<Tracing> {
  const choice = tracingChoice(env, defaultServiceName);
  if (!choice.on) {
    if (choice.warning) log(choice.warning);
    return OFF;
  }
  // Loaded only now: a process that does not trace never pays for the SDK.
  const [{ NodeTracerProvider }, { BatchSpanProcessor, ConsoleSpanExporter }, { resourceFromAttributes }] =
    await Promise.all([
      import("@opentelemetry/sdk-trace-node"),
      import("@opentelemetry/sdk-trace-base"),
      import("@opentelemetry/resources"),
    ]);
  const exporter =
    choice.exporter === "otlp"
      ? new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter()
      : new ConsoleSpanExporter();
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": choice.serviceName }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  provider.register();
  let done: Promise<void> | null = null;
  return {
    on: true,
    shutdown: () =>
      (done ??= provider.shutdown().catch((err: unknown) => log(`traces: not all sent: ${(err as Error).message}`))),
  };
}
