/** The secure session between prp-runnerd and the control-plane authority (runtime.md §5.1–§5.5). */
export * from "./errors.js";
export * from "./limits.js";
export * from "./derive.js";
export * from "./envelope.js";
export * from "./secure-frame.js";
export * from "./handshake-payloads.js";
export * from "./handshake.js";
export * from "./endpoint.js";
export * from "./loopback.js";
export * from "./dial.js";
export * from "./upgrade-server.js";
export * from "./timers.js";
export * from "./heartbeat.js";
export * from "./lease-renewal.js";
export * from "./secure-channel.js";
export * from "./admission.js";
