import { usePageTitle } from "./page-title.js";

/** Start a run: agent, prompt, workspace, labels and priority, sent as POST /v1/runs. */
export function NewRunForm() {
  usePageTitle("New run");
  return <h1>New run</h1>;
}
