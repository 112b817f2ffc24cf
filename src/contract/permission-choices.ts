/**
 * What a person's choice of a permission request's key means as a request.resolve action: one
 * mapping, shared by the runner's ACP driver, the CLI's prompt and the console's page, so that
 * "allow always" is never sent as "allow once".
 */
const ACTION_BY_KEY: Record<string, string> = {
  allow: "accept",
  allow_always: "accept_for_session",
  deny: "decline",
  deny_always: "decline",
};

/**
 * The request.resolve action for a choice key. A key made unique with a suffix (`deny:opt_2`)
 * means what its base key means; an unknown key allows unless it names a denial.
 */
export const actionForChoice = (key: string): string => {
  const base = key.split(":")[0]!;
  return ACTION_BY_KEY[base] ?? (base.startsWith("deny") ? "decline" : "accept");
};
