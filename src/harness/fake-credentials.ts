import { chmodSync, mkdirSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type * as T from "../contract/generated/types.js";

/** The variable that tells the fake harness where its credential file is (the runner's --credential-file). */
export const FAKE_CREDENTIAL_FILE_ENV = "PRP_FAKE_CREDENTIAL_FILE";

/** A credential file shaped like Codex's auth.json: the account and its tokens. */
export const fakeCredentialFile = (account: string, token: string): string =>
  `${JSON.stringify({ auth_mode: "chatgpt", tokens: { access_token: token, refresh_token: `${token}-refresh`, account_id: account } }, null, 2)}\n`;

/**
 * Plays a credentials step on `path` as a harness refreshing its login would (the
 * credentials-refresh scenario): written in place, replaced atomically, half written, deleted,
 * or touched. Returns a line for the harness's stderr when there is no file to change.
 */
export function playCredentialStep(step: T.CredentialsStep, path: string | undefined): string | null {
  if (!path) return `credentials ${step.action}: no credential file (${FAKE_CREDENTIAL_FILE_ENV}); nothing changed`;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const content = () => fakeCredentialFile(step.account!, step.token!);
  switch (step.action) {
    case "write":
      writeFileSync(path, content(), { mode: 0o600 });
      break;
    case "write_partial": {
      const bytes = Buffer.from(content());
      writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length / 2)), { mode: 0o600 });
      break;
    }
    case "replace": {
      const temp = join(dirname(path), `.${process.pid}.credential.tmp`);
      writeFileSync(temp, content(), { mode: 0o600 });
      renameSync(temp, path);
      break;
    }
    case "delete":
      rmSync(path, { force: true });
      break;
    case "touch": {
      const now = new Date();
      utimesSync(path, now, now);
      chmodSync(path, 0o600);
      break;
    }
  }
  return null;
}
