import { existsSync } from "node:fs";
import { join } from "node:path";
import type { AgentProfile } from "./catalog.js";

/** One place the agent may find a credential, and whether something is there: never its value. */
export interface CredentialSource {
  kind: "env" | "file";
  /** The variable's name, or the file's path relative to HOME (`~/…`). */
  name: string;
  present: boolean;
}

export interface CredentialPresence {
  /** Some source is present: the agent may be able to authenticate. */
  present: boolean;
  sources: CredentialSource[];
}

/**
 * Which of the profile's credential sources exist for an agent started with `env` (what it is
 * given: --agent-env on top of PATH and HOME) and the HOME it sees. Only presence is read; a
 * value is never opened, printed or copied.
 */
export function credentialPresence(
  profile: AgentProfile,
  env: Record<string, string | undefined>,
  home: string | undefined,
): CredentialPresence {
  const sources: CredentialSource[] = [
    ...profile.auth.env.map((name) => ({ kind: "env" as const, name, present: (env[name] ?? "") !== "" })),
    ...profile.auth.files.map((file) => ({
      kind: "file" as const,
      name: `~/${file}`,
      present: home !== undefined && existsSync(join(home, file)),
    })),
  ];
  return { present: sources.some((s) => s.present), sources };
}
