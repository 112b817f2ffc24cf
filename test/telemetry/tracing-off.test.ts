import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { tracingChoice } from "../../src/telemetry/tracing-config.js";

const PROBE = join(fileURLToPath(new URL(".", import.meta.url)), "tracing-probe.js");

/** An import hook that fails any import of the OpenTelemetry SDK, its exporters or resources. */
const REFUSE_SDK = `data:text/javascript,${encodeURIComponent(`
import { register } from "node:module";
register("data:text/javascript," + encodeURIComponent(
  "export async function resolve(s, c, next) {" +
  "  if (/@opentelemetry\\\\/(sdk-|exporter-|resources)/.test(s)) throw new Error('SDK loaded: ' + s);" +
  "  return next(s, c);" +
  "}"));
`)}`;

/** The probe under the hook, with only `env` (and PATH). */
function probe(env: Record<string, string>) {
  const r = spawnSync(process.execPath, ["--import", REFUSE_SDK, PROBE], {
    env: { PATH: process.env.PATH ?? "", ...env },
    encoding: "utf8",
    timeout: 30_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("tracing is off by default and costs nothing then", () => {
  it("with no OTEL_* variable no SDK module is loaded and spans do not record", () => {
    const r = probe({});
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { on: false, recording: false });
  });

  it("the hook does catch the SDK: with tracing asked for, the same probe fails on its import", () => {
    const r = probe({ OTEL_TRACES_EXPORTER: "console" });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /SDK loaded: @opentelemetry\/sdk-trace/);
  });
});

describe("tracingChoice: the OTEL_* rule", () => {
  const choice = (env: NodeJS.ProcessEnv) => tracingChoice(env, "prp-test");
  it("is off with nothing set, with OTEL_SDK_DISABLED=true, and with OTEL_TRACES_EXPORTER=none", () => {
    assert.deepEqual(choice({}), { on: false });
    assert.deepEqual(choice({ OTEL_SDK_DISABLED: "true", OTEL_TRACES_EXPORTER: "otlp" }), { on: false });
    assert.deepEqual(choice({ OTEL_SDK_DISABLED: "TRUE", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1" }), {
      on: false,
    });
    assert.deepEqual(choice({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1" }), {
      on: false,
    });
    assert.deepEqual(choice({ OTEL_SERVICE_NAME: "x", OTEL_EXPORTER_OTLP_ENDPOINT: "  " }), { on: false });
  });

  it("is on with an OTLP endpoint (either variable) or a named exporter, with the service name", () => {
    assert.deepEqual(choice({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1" }), {
      on: true,
      exporter: "otlp",
      serviceName: "prp-test",
    });
    assert.deepEqual(choice({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:1", OTEL_SERVICE_NAME: "svc" }), {
      on: true,
      exporter: "otlp",
      serviceName: "svc",
    });
    assert.deepEqual(choice({ OTEL_TRACES_EXPORTER: "console", OTEL_SDK_DISABLED: "false" }), {
      on: true,
      exporter: "console",
      serviceName: "prp-test",
    });
  });

  it("stays off with a warning for an exporter this build does not have, quoting a bounded part of it", () => {
    const c = choice({ OTEL_TRACES_EXPORTER: `zipkin${"x".repeat(1_000)}` });
    assert.equal(c.on, false);
    assert.match((c as { warning: string }).warning, /OTEL_TRACES_EXPORTER="zipkin.*" is not one this build has/);
    assert.ok((c as { warning: string }).warning.length < 200);
  });
});
