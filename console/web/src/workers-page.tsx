import { usePageTitle } from "./page-title.js";

/** The run queue and the workers that serve it: GET /v1/workers and the queued runs. */
export function WorkersPage() {
  usePageTitle("Queue and workers");
  return <h1>Queue and workers</h1>;
}
