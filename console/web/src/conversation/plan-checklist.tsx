type Plan = Record<string, unknown>;
type Step = { stepId?: unknown; body?: unknown; status?: unknown };

const MARK: Record<string, string> = { completed: "☑", in_progress: "◐", pending: "☐" };
const WORDS: Record<string, string> = { completed: "done", in_progress: "in progress", pending: "to do" };

/** The agent's plan (its latest plan.updated) as a checklist: each step and where it is. */
export function PlanChecklist({ plan }: { plan: Plan }) {
  const steps = (Array.isArray(plan.steps) ? (plan.steps as Step[]) : []).slice(0, 256);
  const done = steps.filter((s) => s.status === "completed").length;
  return (
    <section class="card plan" data-testid="plan" aria-label="The agent's plan">
      <p class="card-title">
        Plan: {done} of {steps.length} done
        {typeof plan.revision === "number" ? ` (revision ${plan.revision})` : ""}
      </p>
      <ul class="checklist">
        {steps.map((s, i) => {
          const status = typeof s.status === "string" ? s.status : "pending";
          return (
            <li key={typeof s.stepId === "string" ? s.stepId : i} data-testid="plan-entry" data-status={status}>
              <span aria-hidden="true" class="mark">
                {MARK[status] ?? "☐"}
              </span>{" "}
              {String(s.body ?? "")} <span class="muted">({WORDS[status] ?? status})</span>
            </li>
          );
        })}
      </ul>
      {typeof plan.explanation === "string" && plan.explanation !== "" && <p class="muted">{plan.explanation}</p>}
    </section>
  );
}
