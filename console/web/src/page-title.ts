import { useLayoutEffect } from "preact/hooks";

let waiting = 0;
let current = "PRP console";

const apply = () => {
  document.title = waiting > 0 ? `(${waiting}) ${current}` : current;
};

/** Sets the tab's title while the page is shown: what the page is, then "PRP console". */
export function usePageTitle(title: string): void {
  // Before the page paints: the title is right whenever the page is seen.
  useLayoutEffect(() => {
    current = `${title} · PRP console`;
    apply();
  }, [title]);
}

/** How many runs wait for the person (a pending question or permission): shown first in the title, "(2) …". */
export function setWaitingCount(count: number): void {
  waiting = count;
  apply();
}
