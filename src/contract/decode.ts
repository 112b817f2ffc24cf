import { contractError, type ContractError, type ContractWarning } from "./errors.js";
import { parseJson, type JsonInput } from "./json-input.js";
import { undiscriminatedValidator, type Kind, type KindBinding, type KindValues } from "./kinds.js";
import { postcheck, warnings } from "./postchecks.js";
import { precheck, resolveKind } from "./prechecks.js";
import { schemaError } from "./validators.js";
import { MAX_FRAME_BYTES } from "./versions.js";

export interface DecodeOptions<K extends Kind = Kind> {
  /** The kind the caller expects. Required for kinds without a discriminator (usage, …). */
  kind?: K;
  /** Inputs larger than this many bytes are refused with frame_too_large. Default 1 MiB. */
  maxBytes?: number;
}

export type Decoded<K extends Kind = Kind> =
  | { ok: true; kind: K; value: KindValues[K]; version?: number; warnings: ContractWarning[] }
  | { ok: false; kind?: Kind; error: ContractError };

/**
 * Decodes one PRP document from bytes or text: parse, resolve the discriminator, check required
 * versions, validate against the schema, then the rules the schema cannot state. Never throws
 * for bad input: every refusal is a typed error value. Unknown optional fields on open objects
 * are kept as they are.
 */
export function decode<K extends Kind = Kind>(input: JsonInput, options: DecodeOptions<K> = {}): Decoded<K> {
  const parsed = parseJson(input, options.maxBytes ?? MAX_FRAME_BYTES);
  if (!parsed.ok) return { ok: false, ...(options.kind ? { kind: options.kind } : {}), error: parsed.error };
  return decodeValue(parsed.value, options);
}

/**
 * Decodes one line of a local stdio protocol. Its reader already bounded the line's length
 * (runtime.md §4.7), so the frame limit does not apply; the depth limit does.
 */
export const decodeLine = <K extends Kind>(line: string, kind: K): Decoded<K> =>
  decode(line, { kind, maxBytes: Number.POSITIVE_INFINITY });

/** Decodes a value that is already parsed JSON (for example one line of a stream parsed by its reader). */
export function decodeValue<K extends Kind = Kind>(
  value: unknown,
  options: Pick<DecodeOptions<K>, "kind"> = {},
): Decoded<K> {
  let binding: KindBinding;
  const plain = options.kind ? undiscriminatedValidator(options.kind) : undefined;
  if (plain !== undefined) {
    binding = { kind: options.kind!, validator: plain };
  } else {
    const resolved = resolveKind(value, options.kind);
    if (!resolved.ok) return { ok: false, ...(options.kind ? { kind: options.kind } : {}), error: resolved.error };
    binding = resolved.binding;
    const early = precheck(binding.kind, value as Record<string, unknown>);
    if (early) return { ok: false, kind: binding.kind, error: early };
  }
  const label = () => (binding.version === undefined ? binding.kind : `${binding.kind} v${binding.version}`);
  const error = schemaError(binding.validator, value, label) ?? safely(() => postcheck(binding.kind, value));
  if (error) return { ok: false, kind: binding.kind, error };
  return {
    ok: true,
    kind: binding.kind as K,
    value: value as KindValues[K],
    ...(binding.version !== undefined ? { version: binding.version } : {}),
    warnings: warnings(binding.kind, value),
  };
}

/** Post-checks canonicalise values; a value canonical JSON refuses is a refused document, not a crash. */
function safely(check: () => ContractError | null): ContractError | null {
  try {
    return check();
  } catch (err) {
    const inner = (err as { error?: ContractError }).error;
    return inner ?? contractError("schema_validation", "", (err as Error).message);
  }
}
