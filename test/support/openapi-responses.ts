/**
 * Checks a response the tests received against the OpenAPI document: the operation must declare
 * the status, and the body must match that response's JSON schema (Ajv 2020-12, with the
 * contract's date-time format). The API's tests call it on every response they get, so the
 * document cannot drift from what the server sends.
 *
 *   checkResponse("GET", "/v1/runs/{runId}", 200, await response.json());
 */
import assert from "node:assert/strict";
import Ajv2020Module from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv";
import { openApiDocument } from "../../src/contract/api/openapi.js";
import { DATE_TIME } from "../../src/contract/formats.js";

const Ajv2020 = Ajv2020Module.default;

/** The id the document is registered under, so JSON pointers into it are refs. */
const DOCUMENT_ID = "https://paperclip.dev/prp-kit/api/v1/openapi.json";

type Json = Record<string, unknown>;

const escape = (token: string): string => token.replace(/~/g, "~0").replace(/\//g, "~1");

export interface ResponseChecker {
  checkResponse(method: string, pathTemplate: string, status: number, body: unknown, mediaType?: string): void;
  /** Throws unless `value` matches the component schema `name` (e.g. PrpEvent for an SSE `data:`). */
  checkSchema(name: string, value: unknown): void;
}

/** The document's path template a path matches: itself, or a URL path (query dropped) like /v1/runs/r1. */
export function pathTemplateOf(paths: Record<string, unknown>, path: string): string | undefined {
  if (path in paths) return path;
  const bare = path.replace(/[?#].*$/, "");
  if (bare in paths) return bare;
  for (const template of Object.keys(paths)) {
    const pattern = new RegExp(
      `^${template.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\\\{[^}]+\\\}/g, "[^/]+")}$`,
    );
    if (pattern.test(bare)) return template;
  }
  return undefined;
}

/** A checker over one document (the served one by default; a test may pass a broken twin). */
export function responseChecker(document: Json = openApiDocument()): ResponseChecker {
  // Not strict: the document's own members (openapi, paths, …) are not JSON Schema keywords. The
  // schemas themselves are compiled strictly by the contract's and the document's tests.
  const ajv = new Ajv2020({ strict: false, allErrors: true, allowUnionTypes: true });
  ajv.addFormat("date-time", DATE_TIME);
  ajv.addSchema(document, DOCUMENT_ID);
  const compiled = new Map<string, ValidateFunction>();

  const resolve = (value: unknown): Json => {
    let node = value as Json;
    for (let hops = 0; typeof node?.$ref === "string" && hops < 8; hops++) {
      const pointer = (node.$ref as string).replace(/^#\//, "").split("/");
      let target: unknown = document;
      for (const token of pointer) target = (target as Json)[token.replace(/~1/g, "/").replace(/~0/g, "~")];
      node = target as Json;
    }
    return node;
  };

  return {
    checkResponse(method, pathTemplate, status, body, mediaType = "application/json") {
      const verb = method.toLowerCase();
      const paths = document.paths as Json;
      const template = pathTemplateOf(paths, pathTemplate);
      assert.ok(template, `the OpenAPI document has no path ${pathTemplate}`);
      pathTemplate = template;
      const item = paths[pathTemplate] as Json;
      const operation = item[verb] as Json | undefined;
      assert.ok(operation, `the OpenAPI document has no ${method.toUpperCase()} ${pathTemplate}`);
      const responses = operation.responses as Json;
      const declared = responses[String(status)];
      assert.ok(
        declared,
        `${method.toUpperCase()} ${pathTemplate} answered ${status}, which the document does not declare (it declares ${Object.keys(responses).join(", ")})`,
      );
      const response = resolve(declared);
      const content = response.content as Json | undefined;
      if (content === undefined) {
        assert.equal(body, undefined, `${method.toUpperCase()} ${pathTemplate} ${status} declares no body`);
        return;
      }
      assert.ok(
        content[mediaType],
        `${method.toUpperCase()} ${pathTemplate} ${status} declares no ${mediaType} body (only ${Object.keys(content).join(", ")})`,
      );
      const pointer = `#/paths/${escape(pathTemplate)}/${verb}/responses/${status}`;
      const schemaPointer =
        declared === response
          ? `${pointer}/content/${escape(mediaType)}/schema`
          : `${(declared as Json).$ref as string}/content/${escape(mediaType)}/schema`;
      let validate = compiled.get(schemaPointer);
      if (validate === undefined) {
        validate = ajv.compile({ $ref: `${DOCUMENT_ID}${schemaPointer}` });
        compiled.set(schemaPointer, validate);
      }
      if (!validate(body)) {
        assert.fail(
          `${method.toUpperCase()} ${pathTemplate} ${status}: the body does not match the document: ${ajv.errorsText(validate.errors, { separator: "; " })}\nbody: ${JSON.stringify(body).slice(0, 2000)}`,
        );
      }
    },
    checkSchema(name, value) {
      assert.ok(
        (document.components as Json).schemas && name in ((document.components as Json).schemas as Json),
        `the OpenAPI document has no schema ${name}`,
      );
      const pointer = `#/components/schemas/${escape(name)}`;
      let validate = compiled.get(pointer);
      if (validate === undefined) {
        validate = ajv.compile({ $ref: `${DOCUMENT_ID}${pointer}` });
        compiled.set(pointer, validate);
      }
      if (!validate(value)) {
        assert.fail(
          `${name}: the value does not match the document: ${ajv.errorsText(validate.errors, { separator: "; " })}\nvalue: ${JSON.stringify(value).slice(0, 2000)}`,
        );
      }
    },
  };
}

let served: ResponseChecker | undefined;

/**
 * Throws (an AssertionError) unless `body` is what the document declares for `status` of
 * `method pathTemplate` (e.g. "GET", "/v1/runs/{runId}/events", 200). `pathTemplate` is the
 * document's template, or the path that was requested (`/v1/runs/r1/events?after=3`), which is
 * matched to its template.
 */
export function checkResponse(
  method: string,
  pathTemplate: string,
  status: number,
  body: unknown,
  mediaType = "application/json",
): void {
  served ??= responseChecker();
  served.checkResponse(method, pathTemplate, status, body, mediaType);
}

/** Throws unless `value` matches the document's component schema `name` (PrpEvent, CommittedEvent, …). */
export function checkSchema(name: string, value: unknown): void {
  served ??= responseChecker();
  served.checkSchema(name, value);
}
