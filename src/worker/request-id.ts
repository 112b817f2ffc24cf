import { randomBytes } from "node:crypto";

/**
 * A poll's requestId: 16 random bytes, base64url (22 characters of [A-Za-z0-9_-]). The server
 * knows a retry by it, so a new one is drawn only after a poll was answered.
 */
export const newRequestId = (): string => randomBytes(16).toString("base64url");
