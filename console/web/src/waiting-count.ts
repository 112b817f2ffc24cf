import { fetchWaitingCount } from "./api.js";
import { setWaitingCount } from "./page-title.js";
import { usePoll } from "./use-poll.js";

/** How often the runs that wait for a person are counted again. */
export const WAITING_EVERY_MS = 2000;

/** Keeps the tab's title counting the runs that wait for a person, on every page of the console. */
export function useWaitingCount(): void {
  usePoll(
    async (current) => {
      const answer = await fetchWaitingCount();
      if (current() && answer.ok) setWaitingCount(answer.value);
      // A refused token is said by the page itself; the count stops asking.
      return answer.ok || answer.status === 0 || answer.status >= 500;
    },
    WAITING_EVERY_MS,
    [],
  );
}
