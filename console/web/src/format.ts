/** A duration for a person: 850 ms, 12.3 s, 4 min 05 s. */
export function duration(ms: number | null): string {
  if (ms === null) return "–";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}

export const time = (iso: string | null): string => (iso ? new Date(iso).toLocaleString() : "–");

/** The last part of a command path (the harness's program name). */
export const program = (command: string | null): string => (command ? (command.split(/[\\/]/).at(-1) ?? command) : "–");

/** How long ago, for a person: "just now", "42 s ago", "3 min ago", "5 h ago", "2 d ago". */
export function ago(ms: number): string {
  if (ms < 5_000) return "just now";
  if (ms < 60_000) return `${Math.floor(ms / 1000)} s ago`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ago`;
  if (ms < 86_400_000) return `${Math.floor(ms / 3_600_000)} h ago`;
  return `${Math.floor(ms / 86_400_000)} d ago`;
}

/** An event's time of day, to the millisecond: 14:03:07.412. */
export const clock = (iso: string | undefined): string => {
  const d = new Date(iso ?? "");
  if (Number.isNaN(d.getTime())) return "–";
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;
};

/** Time since the run's start: +1.234 s, +4 min 05.120 s. */
export function sinceStart(ms: number): string {
  if (!Number.isFinite(ms)) return "";
  const sign = ms < 0 ? "−" : "+";
  const abs = Math.abs(ms);
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(3)} s`;
  return `${sign}${Math.floor(abs / 60_000)} min ${((abs % 60_000) / 1000).toFixed(3).padStart(6, "0")} s`;
}

/** Agent text on one line for a person: control characters (ANSI escapes, newlines) shown as ␛/space, cut to `max`. */
export function oneLine(text: string, max: number): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return cut.replace(/\x1b/g, "␛").replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ");
}
