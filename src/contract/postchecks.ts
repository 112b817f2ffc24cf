import { contractError, pointer, type ContractError, type ContractWarning } from "./errors.js";
import { fixtureBindingError } from "./fixture-bindings.js";
import type * as T from "./generated/types.js";
import type { Kind, KindValues, PrpCommand, PrpEvent } from "./kinds.js";
import { questionSetRuleError, responseMismatch } from "./question-rules.js";

/**
 * Rules checked after the schema passed (wire.md §14.2 step 4): what JSON Schema cannot say,
 * and the fixture binding checks. Each returns the first error, or null.
 */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The schema counts code points but cannot refuse a lone surrogate (wire.md §7.7: default reject). */
function activityError(payload: Record<string, unknown>, path: string): ContractError | null {
  for (const key of ["namespace", "activityKey"]) {
    const value = payload[key];
    if (typeof value === "string" && LONE_SURROGATE.test(value)) {
      return contractError(
        "schema_validation",
        pointer(path, key),
        `${key} contains a lone surrogate, which is not a Unicode code point`,
      );
    }
  }
  return null;
}

function eventError(event: PrpEvent, path: string): ContractError | null {
  if (event.eventType === "runtime.activity.recorded")
    return activityError(event.payload as Record<string, unknown>, pointer(path, "payload"));
  return null;
}

function eventsError(events: readonly unknown[], path: string): ContractError | null {
  for (const [i, event] of events.entries()) {
    const err = eventError(event as PrpEvent, `${path}/${i}`);
    if (err) return err;
  }
  return null;
}

function commandError(command: PrpCommand, path: string): ContractError | null {
  // JSON.parse rounds integers above 2^53-1; a rounded sequence number would be a different command (wire.md §3).
  if (!Number.isSafeInteger(command.controllerSeq)) {
    return contractError(
      "schema_validation",
      pointer(path, "controllerSeq"),
      "controllerSeq is above 2^53-1 (9007199254740991), so it cannot be carried exactly and is refused rather than rounded",
    );
  }
  if (command.type === "external_provider.operation") {
    const payload = command.payload as { action?: string; input?: { questionSet?: T.PRPQuestionSet } };
    if (payload.action === "request_user_input" && payload.input?.questionSet) {
      return questionSetRuleError(payload.input.questionSet, `${path}/payload/input/questionSet`);
    }
  }
  return null;
}

function requestError(request: T.PRPRequest, path: string): ContractError | null {
  const input = (request as { schema: string; input?: T.PRPQuestionSet }).input;
  return request.schema === "paperclip.runtime_request.v2" && input
    ? questionSetRuleError(input, pointer(path, "input"))
    : null;
}

function fixtureError(fixture: T.PRPReplayFixture): ContractError | null {
  for (const [i, command] of fixture.commands.entries()) {
    const err = commandError(command as PrpCommand, `/commands/${i}`);
    if (err) return err;
  }
  const events = eventsError(fixture.events, "/events");
  if (events) return events;
  for (const [i, request] of (fixture.requests ?? []).entries()) {
    const err = requestError(request, `/requests/${i}`);
    if (err) return err;
  }
  return fixtureBindingError(fixture);
}

function adapterFixtureError(fixture: T.PRPQuestionAdapterFixture): ContractError | null {
  for (const [i, c] of fixture.cases.entries()) {
    const path = `/cases/${i}`;
    const err =
      questionSetRuleError(c.questionSet, `${path}/questionSet`) ??
      responseMismatch(c.questionSet, c.response, `${path}/response`);
    if (err) return err;
  }
  return null;
}

export function postcheck(kind: Kind, value: unknown): ContractError | null {
  switch (kind) {
    case "event":
      return eventError(value as PrpEvent, "");
    case "runtime-activity":
      return activityError(value as Record<string, unknown>, "");
    case "native-execution":
      return eventsError((value as T.PaperclipRunnerNativeExecutionBundle).events, "/events");
    case "runner-stream-record": {
      const record = value as KindValues["runner-stream-record"];
      return record.kind === "event" ? eventError(record.event, "/event") : null;
    }
    case "command":
      return commandError(value as PrpCommand, "");
    case "fixture":
      return fixtureError(value as T.PRPReplayFixture);
    case "request":
      return requestError(value as T.PRPRequest, "");
    case "question-set":
      return questionSetRuleError(value as T.PRPQuestionSet, "");
    case "question-adapter-fixture":
      return adapterFixtureError(value as T.PRPQuestionAdapterFixture);
    default:
      return null;
  }
}

/** wire.md O8: `not_run` without `reasonCode` is accepted as published, and reported. */
function resultWarnings(result: T.PRPStructuredRunResult, path: string): ContractWarning[] {
  return result.verification.flatMap((check, i) =>
    check.status === "not_run" && check.reasonCode === undefined
      ? [
          {
            code: "not_run_without_reason",
            path: `${path}/verification/${i}`,
            message: `check "${check.commandOrCheck}" is not_run without a reasonCode; producers must say why`,
          },
        ]
      : [],
  );
}

export function warnings(kind: Kind, value: unknown): ContractWarning[] {
  if (kind === "result") return resultWarnings(value as T.PRPStructuredRunResult, "");
  if (kind === "fixture") return resultWarnings((value as T.PRPReplayFixture).result, "/result");
  return [];
}
