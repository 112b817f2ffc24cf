import { ago, time } from "./format.js";

/** A moment as "3 min ago", the exact time in its title and datetime. */
export function Ago({ iso, now }: { iso: string | null; now: number }) {
  if (iso === null) return <>–</>;
  const at = Date.parse(iso);
  if (!Number.isFinite(at)) return <>–</>;
  return (
    <time dateTime={iso} title={time(iso)}>
      {ago(Math.max(0, now - at))}
    </time>
  );
}
