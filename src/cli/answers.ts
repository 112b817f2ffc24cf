import { readFileBounded } from "../contract/bounded-read.js";
import { visible } from "./terminal-text.js";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import { createInterface } from "node:readline/promises";
import { actionForChoice } from "../contract/permission-choices.js";

/** A request as `runtime_request.created` carries it, with what the prompt needs. */
export interface PendingRequest {
  schema: string;
  requestId: string;
  type?: string;
  prompt: string;
  choices?: Array<{ key: string; label: string }>;
  input?: {
    questions: Array<{
      id: string;
      prompt: string;
      required: boolean;
      answerMode: string;
      options?: Array<{ id: string; label: string; recommended?: boolean }>;
    }>;
  };
}

export type Resolution = Record<string, unknown>;

/**
 * `--answer FILE`: a JSON object from requestId to the `resolution` to send in request.resolve,
 * e.g. {"request_permission_1": {"action": "accept", "choice": "allow"},
 *       "request_input_1": {"action": "submit", "text": "main"}}.
 */
export function loadAnswers(path: string): Map<string, Resolution> {
  const read = readFileBounded(path, { maxBytes: MAX_FRAME_BYTES });
  if (!read.ok) throw new Error(`${path}: ${read.error.code}: ${read.error.message}`);
  const value = JSON.parse(read.bytes.toString("utf8")) as unknown;
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new Error(`${path}: expected a JSON object from request id to resolution`);
  const answers = new Map<string, Resolution>();
  for (const [id, resolution] of Object.entries(value)) {
    if (
      resolution === null ||
      typeof resolution !== "object" ||
      typeof (resolution as Resolution).action !== "string"
    ) {
      throw new Error(
        `${path}: the answer to ${id} must be an object with an "action" (accept, accept_for_session, decline, cancel or submit)`,
      );
    }
    answers.set(id, resolution as Resolution);
  }
  return answers;
}

/** Asks a person at the terminal; returns the resolution for request.resolve. */
export async function promptForResolution(request: PendingRequest, output: NodeJS.WritableStream): Promise<Resolution> {
  const rl = createInterface({ input: process.stdin, output });
  try {
    output.write(`\n? ${visible(request.prompt)}\n`);
    if (request.choices?.length) {
      request.choices.forEach((c, i) => output.write(`  ${i + 1}) ${visible(c.label)} [${visible(c.key)}]\n`));
      for (;;) {
        const answer = (await rl.question("  choose a number: ")).trim();
        const choice = request.choices[Number(answer) - 1];
        if (choice) return { action: actionForChoice(choice.key), choice: choice.key };
      }
    }
    if (request.input) {
      const answers: Record<string, unknown> = {};
      for (const q of request.input.questions) {
        output.write(`  ${visible(q.prompt)}${q.required ? "" : " (optional)"}\n`);
        if (q.answerMode === "text") {
          const text = await rl.question("  > ");
          answers[q.id] = text === "" && !q.required ? {} : { text };
          continue;
        }
        const options = q.options ?? [];
        options.forEach((o, i) =>
          output.write(`    ${i + 1}) ${visible(o.label)}${o.recommended ? " (recommended)" : ""}\n`),
        );
        for (;;) {
          const picks = (
            await rl.question(q.answerMode === "multi_select" ? "  numbers, comma-separated: " : "  choose a number: ")
          )
            .split(",")
            .map((s) => options[Number(s.trim()) - 1]);
          if (picks.length > 0 && picks.every(Boolean) && (q.answerMode === "multi_select" || picks.length === 1)) {
            answers[q.id] = { selectedOptionIds: picks.map((o) => o!.id) };
            break;
          }
        }
      }
      return { action: "submit", response: { schema: "paperclip.question_response.v1", answers } };
    }
    return { action: "submit", text: await rl.question("  > ") };
  } finally {
    rl.close();
  }
}
