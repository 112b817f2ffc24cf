/**
 * What an ACP agent hands over in a structure (a tool call's raw input, session info, config
 * options, `_meta`, capabilities), and what a harness logs, is its own to fill: it may carry
 * credentials. Before such a structure reaches an event, `redact` replaces them by "[redacted]"
 * (`redactText` for a string). It works by a rule rather
 * than by a list of key spellings:
 *
 * - a key is split into its words (separators `-_. `, camelCase and acronyms, digits), plurals
 *   made singular, and read by its head, the last word that is not a wrapper like `value` or
 *   `hash`: `db_password`, `apiKeys`, `X-Auth-Token`, `secrets`, `pwd` are secret;
 *   `token_type`, `authMethods`, `max_tokens`, `author`, `tokenizer`, `keyboard` are not.
 *   A head written as one run of letters (`APITOKEN`, `SECRETKEY`, `oauth`) is secret when it
 *   ends with a secret word, or is a key word after a word that makes a key a credential;
 * - a named pair `{name|key|id: "Authorization", value|currentValue|default…: …}` (a header,
 *   an environment variable, a config option) hides its value;
 * - a string that is a credential by its shape (an `Authorization` value such as `Bearer …` or
 *   `Basic <user:pass in base64>`, a well-known token prefix, a private key block, a JWT) is
 *   hidden wherever it sits, and `NAME=value` / `--name value` arguments with a secret name too.
 *
 * Null and boolean values under a secret key stay: a flag like `auth: false` tells nothing.
 */

type Obj = Record<string, unknown>;

export const REDACTED = "[redacted]";

/** Words that name a credential as the head of a key. */
const SECRET_HEADS = new Set([
  "password",
  "passwd",
  "passphrase",
  "pwd",
  "secret",
  "token",
  "credential",
  "cookie",
  "authorization",
  "authorisation",
  "auth",
  "bearer",
  "apikey",
  "privatekey",
  "jwt",
]);
/** Words before `key` that make it a credential rather than an index or a lookup name. */
const KEY_QUALIFIERS = new Set([
  "api",
  "private",
  "secret",
  "ssh",
  "access",
  "signing",
  "encryption",
  "master",
  "client",
  "session",
  "auth",
  "gpg",
  "pgp",
  "license",
  "subscription",
]);
/** Trailing words that wrap the thing named before them: `password_hash`, `token_value`, `auth_header`. */
const WRAPPERS = new Set([
  "value",
  "val",
  "string",
  "str",
  "data",
  "raw",
  "text",
  "hash",
  "digest",
  "header",
  "b64",
  "base64",
  "hex",
  "pem",
  "env",
  "var",
]);
/** Words that make a key a count of something: `max_tokens`, `inputTokens` hold numbers, not tokens. */
const QUANTITIES = new Set([
  "max",
  "min",
  "total",
  "input",
  "output",
  "prompt",
  "completion",
  "cached",
  "reasoning",
  "used",
  "remaining",
  "num",
  "count",
  "limit",
]);

const singular = (w: string): string => (w.length > 3 && w.endsWith("s") && !w.endsWith("ss") ? w.slice(0, -1) : w);

/** One run of letters: a secret word at its end (`apitoken`, `oauth`), or a qualified key (`secretkey`, `sshkey`). */
function secretHead(head: string, before: string | undefined): boolean {
  if (SECRET_HEADS.has(head)) return true;
  if (head === "key") return before !== undefined && KEY_QUALIFIERS.has(before);
  for (const word of SECRET_HEADS)
    if (head.endsWith(word) && head.length > word.length && word.length >= 4) return true;
  return head.endsWith("key") && KEY_QUALIFIERS.has(head.slice(0, -3));
}

/** A stem every secret head contains: most keys have none, and one test lets them pass. */
const MAY_NAME_SECRET = /pass|pwd|secret|token|credential|cookie|auth|bearer|key|jwt/i;

/** Whether values under this key are credentials (see the module comment for the rule). */
export function isSecretKey(key: string): boolean {
  if (!MAY_NAME_SECRET.test(key)) return false;
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter(Boolean)
    .map(singular);
  if (words.some((w) => QUANTITIES.has(w))) return false;
  while (words.length > 1 && WRAPPERS.has(words.at(-1)!)) words.pop();
  const head = words.at(-1);
  return head !== undefined && secretHead(head, words.at(-2));
}

/**
 * Tokens whose prefix says what they are, each long enough to be a real one. A look-ahead or a
 * part that can fail after scanning is bounded, so a line of repeated prefixes costs linear time.
 */
const CREDENTIAL_PATTERNS = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b/g,
  /\bsk-(?=[A-Za-z0-9_-]{0,64}[0-9])(?:ant-|proj-)?[A-Za-z0-9_-]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\bglpat-[A-Za-z0-9_-]{20,}/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  /\bnpm_[A-Za-z0-9]{36}\b/g,
  /\beyJ[A-Za-z0-9_-]{8,256}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]*/g,
];
/** A whole `Authorization` value: `Bearer <b64token>` (RFC 6750). */
const BEARER_VALUE = /^\s*Bearer\s+[A-Za-z0-9._~+/-]+=*\s*$/i;
/** `Bearer <token>` inside longer text: the token has a digit, which prose after "bearer" does not. */
const BEARER_IN_TEXT = /\bBearer\s+(?=[A-Za-z0-9._~+/-]{0,64}[0-9])[A-Za-z0-9._~+/-]{8,}=*/gi;
const BASIC_IN_TEXT = /\bBasic\s+([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])/gi;
/** `NAME=value`, `--name=value`, `Name: value`: an assignment whose name is tested as a key. */
const ASSIGNMENT = /^(-{0,2}[A-Za-z][A-Za-z0-9_.-]*)(=|:[ \t]*)(\S[\s\S]*)$/;
/** The same inside longer text (`error: OPENAI_API_KEY=… is invalid`, `run --api-key …`): the value is one word. */
const ASSIGNMENT_IN_TEXT = /(?<![A-Za-z0-9_.-])(-{0,2}[A-Za-z][A-Za-z0-9_.-]*)=(?!\s)([^\s"',;]+)/g;
const FLAG_IN_TEXT = /(?<![A-Za-z0-9_.-])(--[A-Za-z][A-Za-z0-9_-]*)([ \t]+)(?!-)([^\s"',;]+)/g;

/** `Basic` credentials are base64 of `user:password`; prose after "Basic" does not decode to that. */
const isBasicCredential = (b64: string): boolean =>
  b64.length % 4 === 0 && /^[\x20-\x7e]+:[\x20-\x7e]*$/.test(Buffer.from(b64, "base64").toString("latin1"));

/** Something every pattern above needs: most strings have none, and one test lets them pass. */
const MAY_HOLD_CREDENTIAL =
  /bearer|basic|[=:]|--|-----BEGIN|gh[pousr]_|github_pat_|sk-|xox|glpat-|AKIA|ASIA|AIza|npm_|eyJ/i;

/** A string with every credential-shaped part replaced; `redacted` says whether anything was. */
export function redactText(text: string): { text: string; redacted: boolean } {
  if (!MAY_HOLD_CREDENTIAL.test(text)) return { text, redacted: false };
  if (BEARER_VALUE.test(text)) return { text: REDACTED, redacted: true };
  const assignment = ASSIGNMENT.exec(text);
  if (assignment && isSecretKey(assignment[1]!.replace(/^-+/, "")))
    return { text: `${assignment[1]}${assignment[2]}${REDACTED}`, redacted: true };
  let out = text
    .replace(ASSIGNMENT_IN_TEXT, (all, name: string) =>
      isSecretKey(name.replace(/^-+/, "")) ? `${name}=${REDACTED}` : all,
    )
    .replace(FLAG_IN_TEXT, (all, flag: string, gap: string) =>
      isSecretKey(flag.slice(2)) ? `${flag}${gap}${REDACTED}` : all,
    )
    .replace(BEARER_IN_TEXT, `Bearer ${REDACTED}`)
    .replace(BASIC_IN_TEXT, (all, b64: string) => (isBasicCredential(b64) ? `Basic ${REDACTED}` : all));
  for (const pattern of CREDENTIAL_PATTERNS) out = out.replace(pattern, REDACTED);
  return { text: out, redacted: out !== text };
}

/** Members that name what an object holds: `{name: "Authorization", value}`, `{key: "X-Api-Key", value}`, `{id: "api_key", currentValue}`. */
const NAMING = ["name", "key", "id"];
const VALUE_MEMBERS = new Set(["value", "currentValue", "defaultValue", "default"]);
const namesSecret = (o: Obj): boolean => NAMING.some((k) => typeof o[k] === "string" && isSecretKey(o[k] as string));

/**
 * A JSON structure with its credentials replaced by "[redacted]" (see the module comment). The
 * structure must be bounded in depth already (the ACP driver refuses deeper lines before any
 * walk); the result is a new value, the input is left as it was.
 */
export function redact(value: unknown): { value: unknown; redacted: boolean } {
  let redacted = false;
  const hide = (v: unknown): unknown => {
    if (v === null || typeof v === "boolean") return v;
    redacted = true;
    return REDACTED;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") {
      const r = redactText(v);
      redacted ||= r.redacted;
      return r.text;
    }
    if (Array.isArray(v)) {
      // `["--token", "abc"]`: a flag with a secret name hides the argument after it.
      return v.map((item, i) => {
        const flag = v[i - 1];
        return typeof item === "string" &&
          typeof flag === "string" &&
          /^--?[A-Za-z]/.test(flag) &&
          !flag.includes("=") &&
          isSecretKey(flag.replace(/^-+/, ""))
          ? hide(item)
          : walk(item);
      });
    }
    if (v === null || typeof v !== "object") return v;
    const named = namesSecret(v as Obj);
    return Object.fromEntries(
      Object.entries(v as Obj).map(([k, x]) => [
        k,
        isSecretKey(k) || (named && VALUE_MEMBERS.has(k)) ? hide(x) : walk(x),
      ]),
    );
  };
  const out = walk(value);
  return { value: out, redacted };
}
