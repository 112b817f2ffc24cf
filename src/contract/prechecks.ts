import { contractError, pointer, type ContractError } from "./errors.js";
import { SCHEMA_DISCRIMINATORS, SCHEMA_VERSION_DISCRIMINATORS, type Kind, type KindBinding } from "./kinds.js";
import { isPlainObject } from "./plain-object.js";
import { eventSince } from "./version-gates.js";
import { isSupportedProtocolVersion, SUPPORTED_FIXTURE_VERSIONS, SUPPORTED_RANGE_TEXT } from "./versions.js";

/**
 * The checks that run before schema validation (wire.md §14.2 step 2): the discriminator must
 * name a schema we implement and every required version must be one we support, so that an
 * unknown future document fails closed with its own code rather than a generic schema error.
 */

export type Resolution = { ok: true; binding: KindBinding } | { ok: false; error: ContractError };

/** Finds the kind of a document from its discriminator, checked against the kind the caller expects. */
export function resolveKind(value: unknown, expected: Kind | undefined, path = ""): Resolution {
  const what = expected ?? "document";
  if (!isPlainObject(value)) {
    return {
      ok: false,
      error: contractError("unsupported_required_schema", path, `expected a ${what} object, found ${describe(value)}`),
    };
  }
  const bySchema = typeof value.schema === "string";
  if (!bySchema && typeof value.schemaVersion !== "string") {
    return {
      ok: false,
      error: contractError(
        "unsupported_required_schema",
        pointer(path, "schema"),
        `the ${what} has no schema discriminator`,
      ),
    };
  }
  const binding = bySchema
    ? SCHEMA_DISCRIMINATORS.get(value.schema as string)
    : SCHEMA_VERSION_DISCRIMINATORS.get(value.schemaVersion as string);
  if (binding !== undefined && (expected === undefined || binding.kind === expected)) return { ok: true, binding };
  // Every event and command passes here: the words of a refusal are only spelled for one.
  const found = bySchema ? `schema "${String(value.schema)}"` : `schemaVersion "${String(value.schemaVersion)}"`;
  const at = pointer(path, bySchema ? "schema" : "schemaVersion");
  if (binding === undefined) {
    return {
      ok: false,
      error: contractError("unsupported_required_schema", at, `${found} is not a schema this contract implements`),
    };
  }
  return {
    ok: false,
    error: contractError(
      "unsupported_required_schema",
      at,
      `expected a ${expected}, found ${found} (a ${binding.kind})`,
    ),
  };
}

const versionError = (path: string, field: string, value: unknown, supported: string): ContractError =>
  contractError(
    "unsupported_required_version",
    path,
    `unsupported_required_version: ${field}=${JSON.stringify(value)}; supported=${supported}`,
  );

/** A numeric version field outside its supported set; non-numbers are left to the schema. */
function checkVersion(
  obj: Record<string, unknown>,
  field: string,
  path: string,
  supported: readonly number[],
  text: string,
): ContractError | null {
  const v = obj[field];
  if (typeof v === "number" && !supported.includes(v)) return versionError(pointer(path, field), field, v, text);
  return null;
}

/** Nested receipts whose own `schemaVersion` must be 1 (wire.md D2). */
function checkReceiptVersion(container: unknown, key: string, path: string): ContractError | null {
  if (!isPlainObject(container) || !isPlainObject(container[key])) return null;
  return checkVersion(container[key] as Record<string, unknown>, "schemaVersion", pointer(path, key), [1], "1");
}

/** An envelope may be no newer than the version its container declares (wire.md §15.1, O10). */
export interface VersionCeiling {
  max: number;
  why: string;
}

export function precheckEvent(
  event: Record<string, unknown>,
  path: string,
  ceiling?: VersionCeiling,
): ContractError | null {
  const version = checkVersion(event, "schemaVersion", path, [1, 2, 3], SUPPORTED_RANGE_TEXT);
  if (version) return version;
  const binding = SCHEMA_DISCRIMINATORS.get(event.schema as string);
  if (ceiling !== undefined && binding?.version !== undefined && binding.version > ceiling.max) {
    return versionError(
      pointer(path, "schema"),
      "envelopeVersion",
      binding.version,
      `1-${ceiling.max} (${ceiling.why})`,
    );
  }
  if (event.eventType === "run.terminal") return precheckTerminal(event.payload, pointer(path, "payload"));
  if (!isPlainObject(event.payload) || event.payload.semantic_tool === undefined) return null; // most events: nothing to spell a path for
  return checkReceiptVersion(event.payload, "semantic_tool", pointer(path, "payload"));
}

export function precheckTerminal(terminal: unknown, path: string): ContractError | null {
  return checkReceiptVersion(terminal, "stopReason", path);
}

export function precheckCapabilities(capabilities: unknown, path: string): ContractError | null {
  return checkReceiptVersion(capabilities, "semanticTools", path);
}

/** Every nested document of a fixture must resolve to a supported schema and version. */
export function precheckFixture(fixture: Record<string, unknown>): ContractError | null {
  const top =
    checkVersion(fixture, "fixtureVersion", "", SUPPORTED_FIXTURE_VERSIONS, SUPPORTED_FIXTURE_VERSIONS.join(",")) ??
    checkVersion(fixture, "protocolVersion", "", [1, 2, 3], SUPPORTED_RANGE_TEXT);
  if (top) return top;
  const protocolVersion = isSupportedProtocolVersion(fixture.protocolVersion) ? fixture.protocolVersion : undefined;
  const ceiling =
    protocolVersion === undefined ? undefined : { max: protocolVersion, why: `protocolVersion=${protocolVersion}` };
  if (isPlainObject(fixture.capabilities)) {
    const caps = resolveKind(fixture.capabilities, "capabilities", "/capabilities");
    if (!caps.ok) return caps.error;
    if (ceiling && caps.binding.version! > ceiling.max)
      return versionError(
        "/capabilities/schema",
        "capabilitiesVersion",
        caps.binding.version,
        `1-${ceiling.max} (${ceiling.why})`,
      );
    const nested = precheckCapabilities(fixture.capabilities, "/capabilities");
    if (nested) return nested;
  }
  for (const [listKey, kind] of [
    ["commands", "command"],
    ["events", "event"],
  ] as const) {
    const list = fixture[listKey];
    if (!Array.isArray(list)) continue;
    for (let i = 0; i < list.length; i++) {
      const path = `/${listKey}/${i}`;
      const resolved = resolveKind(list[i], kind, path);
      if (!resolved.ok) return resolved.error;
      const item = list[i] as Record<string, unknown>;
      if (kind === "event") {
        const err = precheckEvent(item, path, ceiling);
        if (err) return err;
      } else if (ceiling && resolved.binding.version! > ceiling.max) {
        return versionError(
          pointer(path, "schema"),
          "envelopeVersion",
          resolved.binding.version,
          `1-${ceiling.max} (${ceiling.why})`,
        );
      }
    }
  }
  return null;
}

/** A PRP event inside another document gets the event prechecks; `ceiling` when that document carries only v1 events. */
function precheckInnerEvent(
  event: unknown,
  path: string,
  ceiling?: { max: number; why: string },
): ContractError | null {
  const resolved = resolveKind(event, "event", path);
  if (!resolved.ok) return resolved.error;
  return precheckEvent(event as Record<string, unknown>, path, ceiling);
}

/** Every event of a native execution bundle is a PRP event and gets the event prechecks. */
export function precheckBundle(bundle: Record<string, unknown>): ContractError | null {
  if (Array.isArray(bundle.events)) {
    for (let i = 0; i < bundle.events.length; i++) {
      const err = precheckInnerEvent(bundle.events[i], `/events/${i}`, {
        max: 1,
        why: "native execution bundles carry v1 events only, wire.md O10",
      });
      if (err) return err;
    }
  }
  return precheckTerminal(bundle.terminal, "/terminal");
}

/**
 * A local runner's events are v1 envelopes, except a type that needs a later version (a session
 * goal), which comes under the runner's version (wire.md O1): no v2 envelope for a v1 type.
 */
function streamCeiling(event: unknown): VersionCeiling | undefined {
  const type = (event as { eventType?: unknown } | null)?.eventType;
  return typeof type === "string" && eventSince(type) > 1
    ? undefined
    : { max: 1, why: "the local runner stream carries v1 envelopes for the types every version has" };
}

/** Runs the prechecks a kind has, after its discriminator resolved. */
export function precheck(kind: Kind, value: Record<string, unknown>): ContractError | null {
  switch (kind) {
    case "event":
      return precheckEvent(value, "");
    case "fixture":
      return precheckFixture(value);
    case "terminal":
      return precheckTerminal(value, "");
    case "capabilities":
      return precheckCapabilities(value, "");
    case "native-execution":
      return precheckBundle(value);
    case "runner-stream-record":
      return value.kind === "event" && value.event !== undefined
        ? precheckInnerEvent(value.event, "/event", streamCeiling(value.event))
        : null;
    case "question-adapter-fixture":
      return checkVersion(
        value,
        "fixtureVersion",
        "",
        SUPPORTED_FIXTURE_VERSIONS,
        SUPPORTED_FIXTURE_VERSIONS.join(","),
      );
    case "semantic-tool":
    case "stop-reason":
      return checkVersion(value, "schemaVersion", "", [1], "1");
    default:
      return null;
  }
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}
