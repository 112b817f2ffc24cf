import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { responseMismatch, type PRPQuestionResponse, type PRPQuestionSet } from "../../src/contract/index.js";
import { questionSet } from "./samples.js";

const set = questionSet() as unknown as PRPQuestionSet;
const response = (answers: PRPQuestionResponse["answers"]): PRPQuestionResponse => ({ schema: "paperclip.question_response.v1", answers });
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
