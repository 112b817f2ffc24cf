import type { PRPCrossLanguageConformanceInput, PRPCrossLanguageConformanceOutput } from "./generated/types.js";

/**
 * The cross-language tracer (wire.md §15.5): the single line every implementation prints for
 * the conformance input, compared byte for byte. Key order is part of the contract.
 */
export function conformanceOutputLine(input: PRPCrossLanguageConformanceInput): string {
  const output: PRPCrossLanguageConformanceOutput = {
    schemaVersion: "paperclip.runner.phase0.output.v1",
    runIdentity: { runId: input.run.runId, sessionId: input.run.sessionId },
    result: { status: input.result.status, summary: input.result.summary },
  };
  return `${JSON.stringify(output)}\n`;
}
