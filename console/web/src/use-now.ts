import { useEffect, useState } from "preact/hooks";

/** The time now, ticking every `everyMs` while `on`: a live run's duration grows with it. */
export function useNow(on: boolean, everyMs = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!on) return;
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [on, everyMs]);
  return now;
}
