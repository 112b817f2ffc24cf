import { useEffect, useState } from "preact/hooks";

/**
 * Calls `read` at once and then every `everyMs`, while the component is shown and `deps` hold
 * (a change of them reads at once). `read` answers false to stop (a refusal that asking again
 * will not change). Returns a function that reads again now.
 */
export function usePoll(read: (isCurrent: () => boolean) => Promise<boolean>, everyMs: number, deps: unknown[]) {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let closed = false;
    const once = async () => {
      const again = await read(() => !closed);
      if (!closed && again) timer = setTimeout(() => void once(), everyMs);
    };
    void once();
    return () => {
      closed = true;
      clearTimeout(timer);
    };
    // `read` is a new closure at each render: `deps` say when what it reads has changed.
  }, [...deps, tick, everyMs]);
  return () => setTick((t) => t + 1);
}
