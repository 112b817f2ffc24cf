import { InvalidArgumentError } from "commander";

const LABEL = /^([a-z0-9][a-z0-9_.-]{0,62})=([^\u0000-\u001f\u007f,]{0,256})$/;

/** `--labels k=v,k2=v2`: labels as the API takes them (a lowercase key; a value without commas). */
export function parseLabels(value: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (value === "") return labels;
  for (const part of value.split(",")) {
    const m = LABEL.exec(part);
    if (!m) throw new InvalidArgumentError(`expected key=value,… with lowercase keys (a-z, 0-9, _ . -), got "${part}"`);
    labels[m[1]!] = m[2]!;
  }
  return labels;
}

/** `30s`, `5m`, `1h`, `1500ms`, or a plain number of seconds. */
export function parseDuration(value: string): number {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(value);
  if (!m) throw new InvalidArgumentError(`expected a duration like 30s, 5m, 1h or 1500ms, got "${value}"`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "ms" | "s" | "m" | "h"];
  const ms = Number(m[1]) * unit;
  if (!Number.isSafeInteger(ms) || ms > 7 * 86_400_000)
    throw new InvalidArgumentError(`at most 7 days, got "${value}"`);
  return ms;
}
