/**
 * ACP permission requests and PRP answers (the mapping, runtime.md §8.7):
 * request.resolve `accept` → the `allow_once` option, `accept_for_session` → `allow_always`,
 * `decline` → `reject_once`, `cancel` → the `cancelled` outcome. Without a controller answer
 * the permission policy decides, and its choice is reported like any answer.
 */
import { actionForChoice } from "../../contract/permission-choices.js";

export type PermissionPolicy = "ask" | "deny" | "allow-reads" | "forbid";
/**
 * `forbid` is upstream's pinned-Codex stance (seed 002 rule 9): the agent is configured never to
 * ask, so a permission request or a question that reaches the projection fails the run closed.
 */
export const PERMISSION_POLICIES: readonly PermissionPolicy[] = ["ask", "deny", "allow-reads", "forbid"];

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: string;
}

export type PermissionOutcome = { outcome: "cancelled" } | { outcome: "selected"; optionId: string };

const KIND_BY_ACTION: Record<string, string> = {
  accept: "allow_once",
  accept_for_session: "allow_always",
  decline: "reject_once",
};
const CHOICE_KEY: Record<string, string> = {
  allow_once: "allow",
  allow_always: "allow_always",
  reject_once: "deny",
  reject_always: "deny_always",
};

/** The key a PRP choice has for an ACP option: `allow`, `allow_always`, `deny`, `deny_always`. */
export const choiceKey = (option: PermissionOption): string => CHOICE_KEY[option.kind] ?? `option:${option.optionId}`;

/** The PRP choices of a permission request, one per ACP option, in the agent's order. */
export function permissionChoices(options: PermissionOption[]): Array<{ key: string; label: string }> {
  const seen = new Set<string>();
  return options.map((o) => {
    let key = choiceKey(o);
    if (seen.has(key)) key = `${key}:${o.optionId}`;
    seen.add(key);
    return { key, label: o.name || o.optionId };
  });
}

/**
 * The ACP outcome a request.resolve resolution asks for, or why it cannot be given. A `choice`
 * naming one of the request's keys picks that exact option; otherwise the action's kind does.
 */
export function outcomeFor(
  resolution: Record<string, unknown>,
  options: PermissionOption[],
): PermissionOutcome | { error: string } {
  const action = resolution.action;
  if (action === "cancel") return { outcome: "cancelled" };
  if (typeof action !== "string" || !(action in KIND_BY_ACTION))
    return {
      error: `resolution.action ${JSON.stringify(action)} is not accept, accept_for_session, decline or cancel`,
    };
  const choices = permissionChoices(options);
  const chosen = typeof resolution.choice === "string" ? choices.findIndex((c) => c.key === resolution.choice) : -1;
  if (chosen >= 0 && actionForChoice(choices[chosen]!.key) === action)
    return { outcome: "selected", optionId: options[chosen]!.optionId };
  const option =
    options.find((o) => o.kind === KIND_BY_ACTION[action]) ??
    (action === "decline" ? options.find((o) => o.kind === "reject_always") : undefined);
  if (option) return { outcome: "selected", optionId: option.optionId };
  // Nothing to reject with: cancelling is the only answer that allows nothing.
  if (action === "decline") return { outcome: "cancelled" };
  return { error: `the agent offered no ${KIND_BY_ACTION[action]} option for ${action}` };
}

/** Tool kinds `allow-reads` allows: they look, they change nothing. */
const READ_KINDS = new Set(["read", "search"]);

/**
 * What a policy answers for a tool kind, or null when it asks (the controller answers). Under
 * `forbid` the run is already failing closed; the request is cancelled so the agent is not left waiting.
 */
export function policyAction(policy: PermissionPolicy, toolKind: unknown): "accept" | "decline" | "cancel" | null {
  if (policy === "ask") return null;
  if (policy === "forbid") return "cancel";
  if (policy === "allow-reads" && typeof toolKind === "string" && READ_KINDS.has(toolKind)) return "accept";
  return "decline";
}

/** What a policy answers for a question: only `ask` puts it to the controller; any other cancels it (nothing is answered for a person). */
export const questionPolicyAction = (policy: PermissionPolicy): "cancel" | null => (policy === "ask" ? null : "cancel");
