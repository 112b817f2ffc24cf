/** One difference between two contracts and what it does to each side (`prp contract diff`). */

export type Effect = "compatible" | "breaking";

export type ChangeKind =
  | "schema_added"
  | "schema_removed"
  | "property_added"
  | "required_property_added"
  | "property_removed"
  | "property_made_required"
  | "property_made_optional"
  | "enum_value_added"
  | "enum_value_removed"
  | "event_type_added"
  | "event_type_removed"
  | "const_changed"
  | "limit_tightened"
  | "limit_loosened"
  | "pattern_changed"
  | "type_widened"
  | "type_narrowed"
  | "type_changed"
  | "object_closed"
  | "object_opened"
  | "branch_added"
  | "branch_removed"
  | "constraint_added"
  | "constraint_removed"
  | "payload_binding_added"
  | "payload_binding_removed"
  | "reference_changed"
  | "keyword_changed"
  | "code_source_changed";

/**
 * `producer`: can documents an old producer writes still be accepted by a new consumer?
 * `consumer`: can an old consumer still accept documents a new producer writes?
 * (Buf's WIRE categories and Avro's reader/writer resolution ask the same two questions.)
 */
export interface Change {
  /** The schema's `$id` and a JSON Pointer into it. */
  schema: string;
  pointer: string;
  kind: ChangeKind;
  detail: string;
  producer: Effect;
  consumer: Effect;
}

export type Direction = "producer" | "consumer" | "both";

export const breaksIn = (change: Change, direction: Direction): boolean =>
  (direction !== "consumer" && change.producer === "breaking") ||
  (direction !== "producer" && change.consumer === "breaking");

const C: Effect = "compatible";
const B: Effect = "breaking";

/** Producer and consumer effects of the kinds whose effect does not depend on context. */
export const FIXED_EFFECTS: Partial<Record<ChangeKind, [Effect, Effect]>> = {
  schema_added: [C, B],
  schema_removed: [B, C],
  property_made_required: [B, C],
  property_made_optional: [C, B],
  enum_value_added: [C, B],
  enum_value_removed: [B, C],
  event_type_added: [C, B],
  event_type_removed: [B, C],
  const_changed: [B, B],
  limit_tightened: [B, C],
  limit_loosened: [C, B],
  pattern_changed: [B, B],
  type_widened: [C, B],
  type_narrowed: [B, C],
  type_changed: [B, B],
  object_closed: [B, C],
  object_opened: [C, B],
  branch_added: [C, B],
  branch_removed: [B, C],
  constraint_added: [B, C],
  constraint_removed: [C, B],
  payload_binding_added: [C, B],
  payload_binding_removed: [B, C],
  reference_changed: [B, B],
  keyword_changed: [B, B],
  code_source_changed: [B, B],
};
