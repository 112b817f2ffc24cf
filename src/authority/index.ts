/**
 * The control-plane authority: AuthorityServer (the WebSocket endpoint runners dial), its stores
 * and server key, and its durable, transport-independent core (runtime.md §5.3 steps 2 and 6,
 * §5.6, §5.8, §5.9, §6): tickets and leases, ingest and ACK, the command queue, on a store keyed
 * by runId.
 */
export * from "./errors.js";
export * from "./limits.js";
export { checkIdentity, identityDifference } from "./identity.js";
export type * from "./store.js";
export { SqliteAuthorityStore, type SqliteStoreOptions } from "./sqlite-store.js";
export { PostgresAuthorityStore, type PostgresStoreOptions } from "./postgres-store.js";
export * from "./runs.js";
export * from "./credentials.js";
export * from "./ingest.js";
export * from "./commands.js";
export * from "./handshake-hooks.js";
export { ServerKey } from "./server-key.js";
export * from "./server-key-source.js";
export * from "./sealed-credential.js";
export { AuthorityServer } from "./server.js";
export type {
  AuthorityServerOptions,
  AuthorityServerSettings,
  SqliteStateDir,
  ConnectionLimits,
  LogFields,
} from "./server-options.js";
export type { AuthorityHooks, HookedConnection } from "./authority-hooks.js";
export {
  openAuthorityStore,
  parseStoreLocation,
  describeStore,
  type OpenStoreOptions,
  type StoreLocation,
} from "./open-store.js";
export { RUNNER_CONTRACT_POLICIES, type RunnerContractOptions, type RunnerContractPolicy } from "./runner-contract.js";
export type { RunIdentity } from "../transport/envelope.js";
