import { sha256Hex } from "../../contract/digest.js";
import { cutText } from "../../contract/text-cut.js";
import { isPlainObject } from "../../contract/plain-object.js";

type Obj = Record<string, unknown>;
const text = (v: unknown): string => (typeof v === "string" ? v.trim() : "");

/** How one form field answers back: the ACP value each option stands for, or how text is read. */
export interface Field {
  questionId: string;
  property: string;
  kind: "select" | "multi" | "text" | "number" | "integer";
  /** Option id → the value it sends (select and multi). */
  values?: Map<string, string | boolean>;
}

/** A form elicitation as a PRP question set, and how its answers map back. */
export interface ProjectedForm {
  prompt: string;
  questionSet: Obj;
  fields: Field[];
}

const MAX_QUESTIONS = 64;
const MAX_OPTIONS = 128;

/** wire.md §11.4: `field-<1-based index>-<propertyName>-<first 12 hex of sha256(propertyName)>`. */
export const questionId = (index: number, property: string): string =>
  `field-${index}-${property}-${sha256Hex(property).slice(0, 12)}`;

/**
 * An ACP `elicitation/create` in form mode (`message` and a `requestedSchema` of primitive
 * properties) as a `paperclip.question_set.v1` (seed 002 rule 4): a string `enum`/`oneOf` or a
 * boolean is single_select, an array of enum values multi_select, a string, number or integer
 * text with its validation. A `default` option is recommended; a required single_select with a
 * default and at least two distinct options is a decision. An empty title or description falls
 * back to a prompt that still asks something. What it cannot represent is an error: the
 * request is then not asked at all.
 */
export function projectForm(params: Obj): ProjectedForm | { error: string } {
  if (params.mode !== "form")
    return {
      error: `elicitation mode ${cutText(String(JSON.stringify(params.mode)), 40)} is not supported (only form)`,
    };
  const schema = params.requestedSchema;
  if (!isPlainObject(schema) || !isPlainObject(schema.properties))
    return { error: "a form elicitation needs requestedSchema.properties" };
  const entries = Object.entries(schema.properties);
  if (entries.length === 0 || entries.length > MAX_QUESTIONS)
    return { error: `a form needs 1 to ${MAX_QUESTIONS} properties; it has ${entries.length}` };
  const required = new Set(
    Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : [],
  );
  const questions: Obj[] = [];
  const fields: Field[] = [];
  for (const [i, [property, spec]] of entries.entries()) {
    if (!isPlainObject(spec))
      return { error: `property ${cutText(String(JSON.stringify(property)), 80)} has no schema` };
    const id = questionId(i + 1, property);
    if (id.length > 160)
      return { error: `property name ${cutText(String(JSON.stringify(property)), 80)}… is too long for a question id` };
    const one = question(id, property, spec, required.has(property));
    if ("error" in one) return one;
    questions.push(one.question);
    fields.push(one.field);
  }
  const message = text(params.message);
  const title = text(schema.title);
  const description = text(schema.description);
  const questionSet: Obj = {
    schema: "paperclip.question_set.v1",
    ...(title ? { title: cutText(title, 1000) } : {}),
    ...(message || description ? { description: cutText(message || description, 4000) } : {}),
    questions,
  };
  return {
    prompt: cutText(message || title || description || "The agent asks for some details.", 4000),
    questionSet,
    fields,
  };
}

function question(
  id: string,
  property: string,
  spec: Obj,
  required: boolean,
): { question: Obj; field: Field } | { error: string } {
  const header = text(spec.title);
  const prompt = cutText(text(spec.description) || header || `What should ${property} be?`, 4000);
  const base: Obj = { id, ...(header ? { header: cutText(header, 1000) } : {}), prompt, required };
  const choices = selectChoices(spec);
  if (choices) {
    if (choices.length === 0 || choices.length > MAX_OPTIONS)
      return { error: `property ${property} needs 1 to ${MAX_OPTIONS} choices` };
    const multi = spec.type === "array";
    const defaults = new Set(multi ? (Array.isArray(spec.default) ? spec.default : []) : [spec.default]);
    const options = choices.map((c, n) => ({
      id: `option-${n + 1}`,
      label: cutText(c.label, 1000) || cutText(String(c.value), 1000),
      ...(defaults.has(c.value) ? { recommended: true } : {}),
    }));
    const decision =
      !multi &&
      required &&
      options.length >= 2 &&
      options.filter((o) => o.recommended).length === 1 &&
      new Set(options.map((o) => o.label)).size === options.length;
    return {
      question: {
        ...base,
        answerMode: multi ? "multi_select" : "single_select",
        ...(decision
          ? { intent: "decision", recommendationRationale: "The agent proposed this value as the default." }
          : {}),
        options,
      },
      field: {
        questionId: id,
        property,
        kind: multi ? "multi" : "select",
        values: new Map(choices.map((c, n) => [`option-${n + 1}`, c.value])),
      },
    };
  }
  if (spec.type === "string" || spec.type === "number" || spec.type === "integer") {
    // Only the constraints a question set can hold: an out-of-range one is left to the agent to check.
    const validation: Obj = {};
    for (const k of spec.type === "string" ? ["minLength", "maxLength"] : []) {
      if (Number.isInteger(spec[k]) && (spec[k] as number) >= 0 && (spec[k] as number) <= 100_000)
        validation[k] = spec[k];
    }
    if (spec.type === "string" && typeof spec.pattern === "string" && spec.pattern.length <= 1000)
      validation.pattern = spec.pattern;
    for (const k of spec.type === "string" ? [] : ["minimum", "maximum"]) {
      if (typeof spec[k] === "number" && Number.isFinite(spec[k])) validation[k] = spec[k];
    }
    if (spec.type !== "string") validation.inputType = spec.type;
    return {
      question: {
        ...base,
        answerMode: "text",
        ...(Object.keys(validation).length > 0 ? { textValidation: validation } : {}),
      },
      field: { questionId: id, property, kind: spec.type === "string" ? "text" : spec.type },
    };
  }
  return {
    error: `property ${cutText(String(JSON.stringify(property)), 80)} has type ${cutText(String(JSON.stringify(spec.type)), 40)}, which a question cannot ask`,
  };
}

/** The choices of a select property, or null when it is not one. */
function selectChoices(spec: Obj): Array<{ value: string | boolean; label: string }> | null {
  const titled = (list: unknown) =>
    Array.isArray(list)
      ? list.filter(isPlainObject).map((o) => ({ value: String(o.const), label: text(o.title) }))
      : null;
  if (spec.type === "boolean")
    return [
      { value: true, label: "Yes" },
      { value: false, label: "No" },
    ];
  if (spec.type === "string") {
    if (Array.isArray(spec.enum)) {
      const names = Array.isArray(spec.enumNames) ? spec.enumNames : [];
      return spec.enum.map((v, i) => ({ value: String(v), label: text(names[i]) || String(v) }));
    }
    return titled(spec.oneOf);
  }
  if (spec.type === "array" && isPlainObject(spec.items)) {
    if (Array.isArray(spec.items.enum)) return spec.items.enum.map((v) => ({ value: String(v), label: String(v) }));
    return titled(spec.items.anyOf);
  }
  return null;
}

/**
 * A `paperclip.question_response.v1` (already checked against the question set) as the content
 * of an ACP `accept`: each answered field by its property name, options as the values they
 * stand for, text as a string or a number. An empty answer leaves its field out.
 */
export function formContent(fields: Field[], response: Obj): { content: Obj } | { error: string } {
  const answers = isPlainObject(response.answers) ? response.answers : {};
  const content: Obj = {};
  for (const f of fields) {
    const answer = answers[f.questionId];
    if (!isPlainObject(answer)) continue;
    if (Array.isArray(answer.selectedOptionIds)) {
      const values = answer.selectedOptionIds.map((o) => f.values?.get(String(o)));
      if (values.some((v) => v === undefined))
        return { error: `an option of ${f.questionId} is not one of its options` };
      content[f.property] = f.kind === "multi" ? values : values[0];
    } else if (typeof answer.text === "string") {
      if (f.kind === "text") content[f.property] = answer.text;
      else {
        const n = Number(answer.text.trim());
        if (answer.text.trim() === "" || !Number.isFinite(n) || (f.kind === "integer" && !Number.isInteger(n)))
          return {
            error: `the answer to ${f.questionId} is not ${f.kind === "integer" ? "an integer" : "a number"}: ${cutText(String(JSON.stringify(answer.text)), 80)}`,
          };
        content[f.property] = n;
      }
    }
  }
  return { content };
}
