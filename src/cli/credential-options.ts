import { isAbsolute, resolve } from "node:path";
import { InvalidArgumentError } from "commander";

/** The generic id pattern of wire.md §7.6 `provider`. */
const PROVIDER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** `--credential-file`: made absolute, since the harness may run in another directory. */
export const parseCredentialFile = (value: string): string => (isAbsolute(value) ? value : resolve(value));

/** `--credential-provider`: the provider auth.credentials.updated names (1–160 characters of the generic id pattern). */
export function parseCredentialProvider(value: string): string {
  if (value.length > 160 || !PROVIDER_PATTERN.test(value))
    throw new InvalidArgumentError(`expected a provider id such as codex (letters, digits, . _ : -), got "${value}"`);
  return value;
}

export const CREDENTIAL_FILE_HELP =
  "the harness's credential file to observe (e.g. $CODEX_HOME/auth.json) once run.prepare carries observeCredentials: true; each change is reported as auth.credentials.updated with a revision, never the file's content or path";
export const CREDENTIAL_PROVIDER_HELP =
  "with --credential-file: the provider the event names (default: the harness driver, fake or acp)";
