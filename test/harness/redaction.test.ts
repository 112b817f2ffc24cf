import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isSecretKey, redact, redactText, REDACTED } from "../../src/harness/redaction.js";

type Obj = Record<string, unknown>;

describe("redaction: credentials an agent hands over are found by a rule, not a word list", () => {
  const SECRET_KEYS = [
    "APITOKEN",
    "SECRETKEY",
    "secrets",
    "tokens",
    "apiKeys",
    "private_keys",
    "ssh_key",
    "auth",
    "bearer",
    "pwd",
    "apikeys",
    "API_TOKEN",
    "accessToken",
    "api-key",
    "X-Api-Key",
    "X-Auth-Token",
    "client.secret",
    "db password",
    "passwordHash",
    "Authorization",
    "proxy-authorization",
    "Set-Cookie",
    "credentials",
    "refresh_token",
    "GITHUBTOKEN",
    "oauth",
    "oauth2",
    "sessionKey",
    "privateKeyPem",
    "jwt",
  ];
  const PLAIN_KEYS = [
    "author",
    "authority",
    "tokenizer",
    "path",
    "keyboard",
    "passing",
    "max_tokens",
    "inputTokens",
    "token_count",
    "tokenType",
    "authMethods",
    "auth_url",
    "passthrough",
    "compass",
    "tokenizer_name",
    "primaryKey",
    "sortKey",
    "key",
    "monkey",
    "sessionId",
    "name",
    "value",
    "authorName",
    "secretary",
  ];
  for (const k of SECRET_KEYS) it(`the key ${JSON.stringify(k)} is secret`, () => assert.equal(isSecretKey(k), true));
  for (const k of PLAIN_KEYS) it(`the key ${JSON.stringify(k)} is not`, () => assert.equal(isSecretKey(k), false));

  const TABLE: Array<{ name: string; input: unknown; output: unknown }> = [
    {
      name: "joined upper-case keys",
      input: { APITOKEN: "t1", SECRETKEY: "s1" },
      output: { APITOKEN: REDACTED, SECRETKEY: REDACTED },
    },
    { name: "a whole object under a secret key", input: { secrets: { db: "pw" } }, output: { secrets: REDACTED } },
    {
      name: "arrays under plural keys",
      input: { tokens: ["a", "b"], apiKeys: ["k"], private_keys: ["p"] },
      output: { tokens: REDACTED, apiKeys: REDACTED, private_keys: REDACTED },
    },
    {
      name: "short names",
      input: { ssh_key: "k", auth: "a", bearer: "b", pwd: "p" },
      output: { ssh_key: REDACTED, auth: REDACTED, bearer: REDACTED, pwd: REDACTED },
    },
    {
      name: "header-style {name, value} and {key, value} pairs",
      input: {
        headers: [
          { name: "Authorization", value: "xyz" },
          { key: "X-Api-Key", value: "k" },
          { name: "Accept", value: "text/plain" },
        ],
      },
      output: {
        headers: [
          { name: "Authorization", value: REDACTED },
          { key: "X-Api-Key", value: REDACTED },
          { name: "Accept", value: "text/plain" },
        ],
      },
    },
    {
      name: "env-style pairs",
      input: {
        env: [
          { name: "GITHUB_TOKEN", value: "g" },
          { name: "HOME", value: "/home/a" },
        ],
      },
      output: {
        env: [
          { name: "GITHUB_TOKEN", value: REDACTED },
          { name: "HOME", value: "/home/a" },
        ],
      },
    },
    {
      name: "config options named like a credential hide their values",
      input: {
        configOptions: [
          { id: "api_key", name: "API key", currentValue: "k1" },
          { id: "model", name: "Model", currentValue: "fast" },
        ],
      },
      output: {
        configOptions: [
          { id: "api_key", name: "API key", currentValue: REDACTED },
          { id: "model", name: "Model", currentValue: "fast" },
        ],
      },
    },
    { name: "a Bearer value under an innocent key", input: { h: "Bearer xyz" }, output: { h: REDACTED } },
    {
      name: "Basic credentials (base64 of user:pass)",
      input: { h: "Basic dXNlcjpwYXNz" },
      output: { h: `Basic ${REDACTED}` },
    },
    {
      name: "a curl command with a bearer token",
      input: { command: "curl -H 'Authorization: Bearer abc123def456' https://x" },
      output: { command: `curl -H 'Authorization: Bearer ${REDACTED}' https://x` },
    },
    {
      name: "well-known token prefixes in text",
      input: {
        note: "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 and sk-ant-api03-abcdefghij0123456789 and AKIAABCDEFGHIJKLMNOP",
      },
      output: { note: `use ${REDACTED} and ${REDACTED} and ${REDACTED}` },
    },
    {
      name: "NAME=value and --flag value arguments",
      input: { args: ["--token", "t0k", "API_KEY=abc", "--password=pw", "--verbose", "yes"] },
      output: { args: ["--token", REDACTED, `API_KEY=${REDACTED}`, `--password=${REDACTED}`, "--verbose", "yes"] },
    },
    {
      name: "a private key block",
      input: { file: "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n" },
      output: { file: `${REDACTED}\n` },
    },
    {
      name: "nested deep inside _meta",
      input: { _meta: { vendor: { auth: { user: "u" } } } },
      output: { _meta: { vendor: { auth: REDACTED } } },
    },
    {
      name: "null and booleans under secret keys stay: a flag tells nothing",
      input: { token: null, auth: false, requiresAuth: true },
      output: { token: null, auth: false, requiresAuth: true },
    },
    {
      name: "look-alike keys and ordinary text stay",
      input: {
        author: "Ann",
        authority: "x",
        tokenizer: "bpe",
        path: "a.ts",
        keyboard: "us",
        passing: 3,
        max_tokens: 5,
        text: "The bearer of this note has a Basic understanding of tokens.",
      },
      output: {
        author: "Ann",
        authority: "x",
        tokenizer: "bpe",
        path: "a.ts",
        keyboard: "us",
        passing: 3,
        max_tokens: 5,
        text: "The bearer of this note has a Basic understanding of tokens.",
      },
    },
    {
      name: "a URL is not an assignment",
      input: { url: "https://example.com/a?b=c" },
      output: { url: "https://example.com/a?b=c" },
    },
  ];
  for (const row of TABLE) {
    it(row.name, () => {
      const before = JSON.stringify(row.input);
      const out = redact(row.input);
      assert.deepEqual(out.value, row.output);
      assert.equal(out.redacted, JSON.stringify(row.output) !== before, "redacted says whether anything changed");
      assert.equal(JSON.stringify(row.input), before, "the input is left as it was");
    });
  }

  it("text: a whole Bearer value, an embedded one, and prose that only mentions bearers", () => {
    assert.deepEqual(redactText("Bearer xyz"), { text: REDACTED, redacted: true });
    assert.deepEqual(redactText("password: hunter2"), { text: `password: ${REDACTED}`, redacted: true });
    assert.deepEqual(redactText("Basic authentication is off"), {
      text: "Basic authentication is off",
      redacted: false,
    });
    assert.deepEqual(redactText("Note: bearer bonds"), { text: "Note: bearer bonds", redacted: false });
  });

  it("text: an assignment or a flag with a secret name inside a longer line (an agent's stderr)", () => {
    const cases: Array<[string, string]> = [
      ["error: OPENAI_API_KEY=abcdef123456 is invalid", `error: OPENAI_API_KEY=${REDACTED} is invalid`],
      ["x ANTHROPIC_API_KEY=abcdef123456", `x ANTHROPIC_API_KEY=${REDACTED}`],
      ["spawn agent --api-key abcdef123456 --verbose", `spawn agent --api-key ${REDACTED} --verbose`],
      ["retry with --token=abcdef123456", `retry with --token=${REDACTED}`],
    ];
    for (const [input, output] of cases) assert.deepEqual(redactText(input), { text: output, redacted: true }, input);
    for (const prose of ["use --max-tokens 5 and --author bob", "a=b token_type=bearer tokenizer=x", "--keyboard us"])
      assert.deepEqual(redactText(prose), { text: prose, redacted: false }, prose);
  });

  it("a structure without credentials comes back equal and not marked", () => {
    const input: Obj = {
      configOptions: [{ id: "model", name: "Model", currentValue: "fast", options: [{ value: "fast", name: "Fast" }] }],
    };
    assert.deepEqual(redact(input), { value: input, redacted: false });
  });
});
