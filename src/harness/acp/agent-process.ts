import type * as acp from "@agentclientprotocol/sdk";
import { nestingError } from "../../contract/json-input.js";
import { cutTextMarked } from "../../contract/text-cut.js";
import { MAX_JSON_DEPTH } from "../../contract/versions.js";
import type { HarnessFact } from "../harness-driver.js";
import { DEFAULT_MAX_LINE_BYTES } from "../line-reader.js";
import { activityDirOf, harnessEnv } from "../notification-env.js";
import { harnessView } from "../sandbox/sandbox-policy.js";
import { SupervisedProcess } from "../supervisor.js";
import type { AcpDriverOptions } from "./acp-driver-options.js";
import type { AcpInput } from "./projection.js";

/** What the launched agent's stdio is reported to, besides the SDK's stream. */
export interface AgentTap {
  /** The agent wrote a line, whatever it holds. */
  line(): void;
  /** Something to project, in wire order. */
  input(input: AcpInput): void;
  /** A fact the projection does not make (a line refused unread). */
  fact(fact: HarnessFact): void;
  /** The agent is writing a line it may never end. */
  overlong(limit: number): void;
}

/** What launchAgent reads of the driver's options: how to start, bound and end the agent. */
export type AgentLaunchOptions = Pick<
  AcpDriverOptions,
  "command" | "cwd" | "env" | "runtimeEnv" | "sandbox" | "maxLineBytes" | "logMaxLines" | "logMaxBytes" | "graceMs"
>;

/** The agent's whole environment: PATH, HOME, its configured variables and the runtime's. */
export const agentEnv = (o: Pick<AcpDriverOptions, "env" | "runtimeEnv">): Record<string, string> =>
  harnessEnv({ ...(process.env.HOME ? { HOME: process.env.HOME } : {}), ...o.env }, o.runtimeEnv ?? {});

/**
 * Starts the agent in a supervised process group (sandboxed when asked), with only PATH, HOME
 * and its configured variables, and taps its stdio: every line it writes is projected before
 * the SDK reads it from the returned stream, and every message the SDK sends is projected as
 * it is written.
 */
export function launchAgent(o: AgentLaunchOptions, tap: AgentTap): { h: SupervisedProcess; stream: acp.Stream } {
  const limit = o.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  let incoming!: ReadableStreamDefaultController<acp.AnyMessage>;
  const env = agentEnv(o);
  const view = harnessView(o.sandbox, {
    readable: activityDirOf(env),
    writable: [o.cwd, ...(env.HOME ? [env.HOME] : [])],
  });
  const h = new SupervisedProcess({
    command: "/bin/sh",
    args: ["-c", `exec ${o.command}`],
    cwd: o.cwd,
    env,
    ...(view ? { sandbox: view } : {}),
    maxLineBytes: limit,
    ...(o.logMaxLines ? { logMaxLines: o.logMaxLines } : {}),
    ...(o.logMaxBytes ? { logMaxBytes: o.logMaxBytes } : {}),
    ...(o.graceMs !== undefined ? { graceMs: o.graceMs } : {}),
    onLine: (text) => {
      tap.line();
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch {
        return tap.input({ kind: "unparsable", text });
      }
      // Before the projection or the SDK walks it: a deep line would overflow their stacks.
      const deep = nestingError(message);
      if (deep)
        return tap.fact({
          kind: "violation",
          code: "protocol_error",
          message: `the agent wrote a JSON line nested deeper than the ${MAX_JSON_DEPTH}-level limit (at ${cutTextMarked(deep.path, 120)}): refused unread`,
        });
      tap.input({ kind: "received", message });
      try {
        incoming.enqueue(message as acp.AnyMessage);
      } catch {
        // the connection is closed: nothing reads the agent any more
      }
    },
    onOversize: (bytes) =>
      tap.fact({
        kind: "violation",
        message: `the agent wrote a stdout line of ${bytes} bytes, over the ${limit}-byte limit`,
      }),
    // Not at its newline, which may never come: a hostile agent could stream for ever into one line.
    onOverlong: () => tap.overlong(limit),
  });
  const stream: acp.Stream = {
    readable: new ReadableStream<acp.AnyMessage>({ start: (c) => void (incoming = c) }),
    writable: new WritableStream<acp.AnyMessage>({
      write: (message) => {
        tap.input({ kind: "sent", message });
        h.writeLine(JSON.stringify(message));
      },
    }),
  };
  return { h, stream };
}
