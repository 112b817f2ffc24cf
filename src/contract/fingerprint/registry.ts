/**
 * The registered sources of the contract digest (runtime.md §12.2): what a runner and a control
 * plane must agree on byte for byte in meaning. Paths are relative to the package root. Adding a
 * wire-facing schema folder, generated module or hand-written key list means adding it here;
 * a listed source that is missing fails the digest, so two build contexts cannot silently
 * differ.
 */
export type RegisteredSource =
  /** Every `*.schema.json` in a folder, annotations removed, canonical JSON. */
  | { kind: "schemas"; path: string }
  /** A generated TypeScript module of types: comments, formatting and type names left out. */
  | { kind: "types"; path: string }
  /** Hand-written constants: each named `const` declaration's tokens. */
  | { kind: "constants"; path: string; names: readonly string[] };

export const REGISTERED_SOURCES: readonly RegisteredSource[] = [
  { kind: "schemas", path: "protocol/schemas" },
  { kind: "schemas", path: "protocol/provider-schemas" },
  { kind: "types", path: "src/contract/generated/types.ts" },
  { kind: "constants", path: "src/contract/validator-names.ts", names: ["VALIDATOR_REFS"] },
  {
    kind: "constants",
    path: "src/contract/versions.ts",
    names: ["SUPPORTED_PROTOCOL_VERSIONS", "SUPPORTED_FIXTURE_VERSIONS", "MAX_FRAME_BYTES", "MAX_JSON_DEPTH"],
  },
  { kind: "constants", path: "src/contract/reserved-environment.ts", names: ["RESERVED_ENVIRONMENT_KEYS"] },
  {
    kind: "constants",
    path: "src/transport/envelope.ts",
    names: ["IDENTITY_FIELDS", "HANDSHAKE_KINDS", "CORE_TO_RUNNER_KINDS", "RUNNER_TO_CORE_KINDS"],
  },
  { kind: "constants", path: "src/transport/derive.ts", names: ["LABELS", "CHALLENGE_MEMBERS"] },
  { kind: "constants", path: "src/authority/limits.ts", names: ["RESULT_STATUSES", "COMMITTED_WINDOW"] },
];
