import type { ViewSession } from "../api.js";

/** The session's goal (session.goal.*): its objective and status, or that it was cleared. */
export function GoalCard({ session }: { session: ViewSession }) {
  const g = session.sessionGoal;
  if (!g) return null;
  const goal = g.goal;
  return (
    <section class="card goal" data-testid="goal" aria-label="Goal">
      {goal ? (
        <p>
          <strong>Goal</strong> ({goal.status}
          {goal.workingNow ? ", being worked on" : ""}): {goal.objective}
        </p>
      ) : (
        <p>The goal was cleared.</p>
      )}
    </section>
  );
}
