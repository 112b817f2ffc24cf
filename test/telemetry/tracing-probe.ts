/**
 * Started by tracing-off.test.ts in a process of its own, under an import hook that refuses
 * every OpenTelemetry SDK module: starts tracing with the environment it was given and a run's
 * spans, and prints whether the run span records.
 */
import { startTracing } from "../../src/telemetry/tracing.js";
import { RunSpans } from "../../src/telemetry/run-spans.js";
import { trace } from "@opentelemetry/api";

const tracing = await startTracing("prp-probe", process.env, (text) => process.stderr.write(`${text}\n`));
new RunSpans({ runId: "run_probe", runnerId: "runner_probe", sessionId: "session_probe" });
const recording = trace.getTracer("probe").startSpan("probe").isRecording();
await tracing.shutdown();
process.stdout.write(JSON.stringify({ on: tracing.on, recording }));
