import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { responseMismatch, type PRPQuestionResponse, type PRPQuestionSet } from "../../src/contract/index.js";
import { questionSet } from "./samples.js";

const set = questionSet() as unknown as PRPQuestionSet;
const response = (answers: PRPQuestionResponse["answers"]): PRPQuestionResponse => ({
  schema: "paperclip.question_response.v1",
  answers,
});
const mismatch = (answers: PRPQuestionResponse["answers"]) => responseMismatch(set, response(answers), "");

describe("a question response against its set", () => {
  it("accepts selected options of the question and text for a text question", () => {
    assert.equal(mismatch({ approach: { selectedOptionIds: ["a"] }, notes: { text: "none" } }), null);
    assert.equal(mismatch({ approach: { selectedOptionIds: ["b"] }, notes: {} }), null);
  });

  it("refuses an unknown question id, naming it", () => {
    const err = mismatch({ approach: { selectedOptionIds: ["a"] }, colour: { text: "blue" } });
    assert.equal(err?.code, "binding_mismatch");
    assert.equal(err?.path, "/answers/colour");
    assert.match(err?.message ?? "", /unknown question ID "colour"/);
  });

  it("refuses an option of another question, two options for single_select, and text for a select without custom answers", () => {
    assert.equal(mismatch({ approach: { selectedOptionIds: ["z"] } })?.path, "/answers/approach/selectedOptionIds");
    assert.match(mismatch({ approach: { selectedOptionIds: ["a", "b"] } })?.message ?? "", /exactly one/);
    assert.equal(mismatch({ approach: { text: "A" } })?.path, "/answers/approach/text");
  });

  it("refuses a required question left empty or unanswered", () => {
    assert.match(mismatch({ approach: {} })?.message ?? "", /required question "approach" has an empty answer/);
    assert.match(mismatch({ notes: { text: "x" } })?.message ?? "", /required question "approach" is not answered/);
  });
});

describe("a text answer against its question's textValidation", () => {
  const textSet = (textValidation: Record<string, unknown>) =>
    ({
      schema: "paperclip.question_set.v1",
      questions: [{ id: "q", prompt: "How many?", required: true, answerMode: "text", textValidation }],
    }) as unknown as PRPQuestionSet;
  const ROWS: Array<[string, Record<string, unknown>, string, RegExp | null]> = [
    ["an integer", { inputType: "integer" }, "3", null],
    ["not an integer", { inputType: "integer" }, "3.5", /is not an integer/],
    ["not a number", { inputType: "number" }, "three", /is not a number/],
    ["an empty number", { inputType: "number" }, " ", /is not a number/],
    ["a number", { inputType: "number", minimum: 0, maximum: 2 }, "1.5", null],
    ["below the minimum", { inputType: "number", minimum: 2 }, "1", /below the minimum 2/],
    ["above the maximum", { inputType: "integer", maximum: 5 }, "6", /above the maximum 5/],
    ["too short", { minLength: 3 }, "ab", /shorter than 3/],
    ["too long", { maxLength: 3 }, "abcd", /longer than 3/],
    ["a pattern is not run here", { pattern: "^x$" }, "y", null],
  ];
  for (const [name, validation, text, expected] of ROWS) {
    it(`${name}: ${JSON.stringify(text)}`, () => {
      const err = responseMismatch(textSet(validation), response({ q: { text } }), "/resolution/response");
      if (expected === null) assert.equal(err, null);
      else {
        assert.equal(err?.code, "binding_mismatch");
        assert.equal(err?.path, "/resolution/response/answers/q/text");
        assert.match(err?.message ?? "", expected);
      }
    });
  }
});
