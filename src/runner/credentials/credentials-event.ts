/** The event type and payload of wire.md §7.6 (D3). */
export const CREDENTIALS_UPDATED = "auth.credentials.updated";
export const CREDENTIALS_UPDATED_SCHEMA = "paperclip.auth.credentials.updated.v1";
/** The selected harness authentication within the envelope's normalized session (runtime.md §13.1). */
export const HARNESS_AUTH_BINDING = "harness-auth";

export interface CredentialsUpdatedPayload {
  schema: typeof CREDENTIALS_UPDATED_SCHEMA;
  provider: string;
  bindingId: string;
  revision: number;
  detection: "credential_store";
}

/** Exactly the four fields the closed payload allows: never a token, account, path or fingerprint. */
export const credentialsUpdated = (
  provider: string,
  bindingId: string,
  revision: number,
): CredentialsUpdatedPayload => ({
  schema: CREDENTIALS_UPDATED_SCHEMA,
  provider,
  bindingId,
  revision,
  detection: "credential_store",
});

/** The binding and revision of an auth.credentials.updated payload; null for anything else. */
export function credentialRevisionOf(
  eventType: string,
  payload: Record<string, unknown>,
): { bindingId: string; revision: number } | null {
  if (eventType !== CREDENTIALS_UPDATED) return null;
  return typeof payload.bindingId === "string" && typeof payload.revision === "number"
    ? { bindingId: payload.bindingId, revision: payload.revision }
    : null;
}
