import { fetchEventPage } from "./api.js";

/** Events read per request while downloading (the API's page bound). */
const PAGE = 1000;

/**
 * The run's events as NDJSON (one envelope a line, as `prp events --json` prints them), read by
 * range: each page is appended to the Blob and dropped, so the page never holds the run's text
 * as one string. `progress` is told how far it got.
 */
export async function eventsNdjson(runId: string, progress: (done: number) => void): Promise<Blob> {
  const type = "application/x-ndjson";
  let blob = new Blob([], { type });
  let after = 0;
  for (;;) {
    const page = await fetchEventPage(runId, { after, limit: PAGE });
    if (!page.ok) throw new Error(`${page.error.code}: ${page.error.message}`);
    const { events, next, ended } = page.value;
    if (events.length === 0) return blob;
    blob = new Blob([blob, events.map((e) => `${JSON.stringify(e.event)}\n`).join("")], { type });
    after = next;
    progress(after);
    if (ended || events.length < PAGE) return blob;
  }
}

/** Saves a Blob as a file, from this page. */
export function saveBlob(blob: Blob, name: string): void {
  const href = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = href;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(href), 60_000);
}
