import { cutText } from "../../../contract/text-cut.js";
import { redactText } from "../../redaction.js";
import { isObj, key } from "./wire.js";

/** A request the driver sent the agent, until the agent answers it. */
export interface SentRequest {
  method: string;
  params: unknown;
}

/** A JSON-RPC error the agent answered with, in words a person can act on. */
export type RpcError = { code: string; message: string; providerError: { code: number | null; message: string } };

/** Readable reasons for JSON-RPC errors an agent returns (code → what a person does about it). */
const ERROR_CODES: Record<number, [string, string]> = {
  [-32000]: ["authentication_required", "authentication required: log the agent in"],
  [-32002]: ["resource_not_found", "the agent does not know this resource"],
  [-32600]: ["invalid_request", "the agent refused the request as invalid"],
  [-32601]: ["method_not_found", "the agent does not support this method"],
  [-32602]: ["invalid_params", "the agent refused the request's parameters"],
  [-32603]: ["agent_internal_error", "the agent failed internally"],
};

export function describeRpcError(error: unknown): RpcError {
  const e = isObj(error) ? error : {};
  const code = typeof e.code === "number" ? e.code : null;
  const text = typeof e.message === "string" ? cutText(redactText(e.message).text, 2000) : "no message";
  const known = code !== null ? ERROR_CODES[code] : undefined;
  return {
    code: known?.[0] ?? "agent_error",
    message: known ? `${known[1]} (${text})` : `the agent answered with an error: ${text}`,
    providerError: { code, message: text },
  };
}

/** JSON-RPC correlation: which request of the driver's an answer of the agent's is for. */
export class RpcCorrelation {
  private readonly pending = new Map<string, SentRequest>();

  sent(id: unknown, request: SentRequest): void {
    this.pending.set(key(id), request);
  }

  /** The request an answer is for, no longer pending; undefined when no such request was sent. */
  answered(id: unknown): SentRequest | undefined {
    const request = this.pending.get(key(id));
    this.pending.delete(key(id));
    return request;
  }
}
