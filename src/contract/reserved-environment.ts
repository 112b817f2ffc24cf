/**
 * Environment keys the host owns (runtime.md §12.2 item 4, §13.2): the runner sets them for the
 * harness and nothing configured may set or override them. The bootstrap ticket is the
 * runner's own secret and never reaches a harness.
 */
export const RESERVED_ENVIRONMENT_KEYS = [
  "PAPERCLIP_RUNNER_BOOTSTRAP_TICKET",
  "PAPERCLIP_RUNTIME_NOTIFICATION_HELPER",
  "PAPERCLIP_RUNTIME_NOTIFICATION_CONTEXT",
] as const;

export type ReservedEnvironmentKey = (typeof RESERVED_ENVIRONMENT_KEYS)[number];

export const isReservedEnvironmentKey = (key: string): key is ReservedEnvironmentKey =>
  (RESERVED_ENVIRONMENT_KEYS as readonly string[]).includes(key);
