import { cutText } from "../../../contract/text-cut.js";
import { redactText } from "../../redaction.js";
import type { ProjectionState } from "./state.js";
import type { Obj } from "./wire.js";

const STATUSES = ["pending", "in_progress", "completed"];

/** The agent's plan: each `plan` update is the whole plan again, one revision higher. */
export class Plans {
  private revision = 0;

  update(state: ProjectionState, entries: Obj[]): void {
    this.revision++;
    const steps = entries.slice(0, 256).map((e, i) => ({
      stepId: `step_${i + 1}`,
      body: cutText(redactText(String(e.content)).text, 4000),
      status: STATUSES.includes(e.status as string) ? e.status : "pending",
    }));
    state.turnEvent("plan.updated", {
      schema: "paperclip.plan.updated.v1",
      planId: `plan_${state.turnId}`.slice(0, 160),
      revision: this.revision,
      steps,
      complete: steps.length > 0 && steps.every((s) => s.status === "completed"),
      syncStatus: "not_applicable",
      explanation: null,
      documentRevision: null,
    });
  }
}
