import { contractError, pointer, type ContractError, type ContractErrorCode } from "./errors.js";
import type { PRPQuestionResponse, PRPQuestionSet } from "./generated/types.js";

/**
 * Question-set rules JSON Schema cannot state (wire.md §11.2): a decision question has exactly
 * one recommended option and distinct option labels; question ids are unique in a set, and
 * option ids unique in a question, so that an answer names exactly one thing.
 * The set must already be schema-valid.
 */
export function questionSetRuleError(set: PRPQuestionSet, path: string): ContractError | null {
  const fail = (at: string, message: string) => contractError("schema_validation", at, message);
  const questionIds = new Set<string>();
  for (const [i, q] of set.questions.entries()) {
    const at = pointer(pointer(path, "questions"), i);
    if (questionIds.has(q.id)) return fail(pointer(at, "id"), `question id "${q.id}" appears twice in the set`);
    questionIds.add(q.id);
    const options = q.options ?? [];
    const optionIds = new Set(options.map((o) => o.id));
    if (optionIds.size !== options.length)
      return fail(pointer(at, "options"), `question "${q.id}" repeats an option id`);
    if (q.intent === "decision") {
      const recommended = options.filter((o) => o.recommended === true).length;
      if (recommended !== 1)
        return fail(
          pointer(at, "options"),
          `decision question "${q.id}" must recommend exactly one option; it recommends ${recommended}`,
        );
      if (new Set(options.map((o) => o.label)).size !== options.length) {
        return fail(pointer(at, "options"), `decision question "${q.id}" must have distinct option labels`);
      }
    }
  }
  return null;
}

/**
 * Does a response answer this set (wire.md §11.3)? Every key is a question of the set, every
 * selected option belongs to its question, a single_select answer selects exactly one option,
 * a text question is answered with text, and a required question is not left empty.
 */
export function responseMismatch(
  set: PRPQuestionSet,
  response: PRPQuestionResponse,
  path: string,
  code: ContractErrorCode = "binding_mismatch",
): ContractError | null {
  const fail = (at: string, message: string) => contractError(code, at, message);
  const questions = new Map(set.questions.map((q) => [q.id, q]));
  const answersPath = pointer(path, "answers");
  for (const [id, answer] of Object.entries(response.answers)) {
    const at = pointer(answersPath, id);
    const question = questions.get(id);
    if (question === undefined) return fail(at, `answer has unknown question ID "${id}"`);
    if (answer.selectedOptionIds !== undefined) {
      if (question.answerMode === "text") return fail(at, `question "${id}" takes text, not selected options`);
      const optionIds = new Set((question.options ?? []).map((o) => o.id));
      const unknown = answer.selectedOptionIds.find((o) => !optionIds.has(o));
      if (unknown !== undefined)
        return fail(pointer(at, "selectedOptionIds"), `option "${unknown}" does not belong to question "${id}"`);
      if (question.answerMode === "single_select" && answer.selectedOptionIds.length !== 1) {
        return fail(
          pointer(at, "selectedOptionIds"),
          `single_select question "${id}" needs exactly one selected option`,
        );
      }
    } else if (answer.text !== undefined) {
      if (question.answerMode !== "text" && question.customAnswer === undefined) {
        return fail(pointer(at, "text"), `question "${id}" takes selected options and allows no custom answer`);
      }
      const invalid = question.answerMode === "text" ? textProblem(answer.text, question.textValidation) : null;
      if (invalid) return fail(pointer(at, "text"), `the answer to question "${id}" ${invalid}`);
    } else if (question.required) {
      return fail(at, `required question "${id}" has an empty answer`);
    }
  }
  for (const q of set.questions) {
    if (q.required && !(q.id in response.answers))
      return fail(answersPath, `required question "${q.id}" is not answered`);
  }
  return null;
}

/**
 * Why a text answer breaks its question's textValidation (length, a number or integer input and
 * its bounds), or null. `pattern` is not checked: it is a provider's regular expression, and
 * running it here would let a question stall the runner.
 */
function textProblem(text: string, v: PRPQuestionSet["questions"][number]["textValidation"]): string | null {
  if (v === undefined) return null;
  if (v.minLength !== undefined && text.length < v.minLength) return `is shorter than ${v.minLength} characters`;
  if (v.maxLength !== undefined && text.length > v.maxLength) return `is longer than ${v.maxLength} characters`;
  if (v.inputType !== "number" && v.inputType !== "integer") return null;
  const n = Number(text.trim());
  if (text.trim() === "" || !Number.isFinite(n) || (v.inputType === "integer" && !Number.isInteger(n)))
    return `is not ${v.inputType === "integer" ? "an integer" : "a number"}`;
  if (v.minimum !== undefined && n < v.minimum) return `is below the minimum ${v.minimum}`;
  if (v.maximum !== undefined && n > v.maximum) return `is above the maximum ${v.maximum}`;
  return null;
}
