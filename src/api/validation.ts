import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js";
import type { FastifySchemaCompiler } from "fastify";
import { API_SCHEMAS, type ApiSchemaName } from "../contract/api/schemas.js";
import { DATE_TIME } from "../contract/formats.js";
import { ApiError } from "./errors.js";

/** A route's schema: a reference into API_SCHEMAS, which stays the one source. */
export const apiSchema = (name: ApiSchemaName) => ({ $ref: `${API_SCHEMAS.$id}#/$defs/${name}` });

function newAjv(coerceTypes: false | "array"): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, removeAdditional: false, allErrors: false, coerceTypes, useDefaults: false });
  // The contract's own date-time rule, as its validators apply it.
  ajv.addFormat("date-time", DATE_TIME);
  ajv.addSchema(API_SCHEMAS);
  return ajv;
}

/**
 * Fastify's validator compiler over our own Ajv (2020-12, strict, nothing removed): bodies
 * and params exactly as sent; querystrings through a second instance that coerces text to
 * the declared types (a repeated key becomes an array).
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const exact = newAjv(false);
  const coercing = newAjv("array");
  return ({ schema, httpPart }) => (httpPart === "querystring" ? coercing : exact).compile(schema as object);
}

/** The first Ajv error as a typed refusal with a JSON pointer to the refused member. */
export function validationError(errors: ErrorObject[], context: string): ApiError {
  const e = errors[0];
  if (!e) return new ApiError("invalid_request", `the ${context} is invalid`);
  const prefix = context === "body" ? "" : `/${context}`;
  let path = prefix + e.instancePath;
  let message = `${e.instancePath === "" ? context : e.instancePath} ${e.message ?? "is invalid"}`;
  if (e.keyword === "additionalProperties") {
    const member = String((e.params as { additionalProperty: string }).additionalProperty);
    path += `/${member.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    message = `unknown member ${JSON.stringify(member)}: this ${context === "body" ? "request" : context} is closed`;
  } else if (e.keyword === "required") {
    const member = String((e.params as { missingProperty: string }).missingProperty);
    path += `/${member}`;
    message = `${member} is required`;
  }
  return new ApiError("invalid_request", message, path);
}

/** The path parameters of every route under /runs/{runId}. */
export const RUN_PARAMS = {
  type: "object",
  additionalProperties: false,
  required: ["runId"],
  properties: { runId: { type: "string", minLength: 1, maxLength: 240 } },
} as const;
