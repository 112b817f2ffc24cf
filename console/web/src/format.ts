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
