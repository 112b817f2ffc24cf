import type { ApiRefusal, CommandReceipt } from "./api.js";

export type Outcome = { receipt: CommandReceipt } | { error: ApiRefusal } | null;

/** Where a command is now, in words: queued, delivered, then the runner's result and its reason. */
export function commandState(c: CommandReceipt | undefined): string {
  if (!c) return "queued";
  if (c.status === null) return c.delivered ? "delivered to the runner, waiting for its result" : "queued";
  if (c.status === "completed") return "applied by the runner";
  return `${c.status} by the runner${c.reason ? `: ${c.reason}` : ""}`;
}

/** The last command's refusal, or its receipt followed by its later status from the run's view. */
export function OutcomeLine({ outcome, commands }: { outcome: Outcome; commands: CommandReceipt[] }) {
  if (outcome === null) return null;
  if ("error" in outcome)
    return (
      <p role="alert" class="refusal" data-testid="refusal">
        Refused: <code>{outcome.error.code}</code>
        {outcome.error.path ? ` at ${outcome.error.path}` : ""}: {outcome.error.message}
      </p>
    );
  const r = outcome.receipt;
  const now = commands.find((c) => c.commandId === r.commandId);
  const failed = now?.status !== undefined && now.status !== null && now.status !== "completed";
  return (
    <p role="status" class={failed ? "refusal" : "receipt"} data-testid="receipt">
      {r.created === false ? "Already queued" : "Queued"} {r.type} as <code>{r.commandId}</code> (controllerSeq{" "}
      {r.controllerSeq}): <span data-testid="command-state">{commandState(now)}</span>.
    </p>
  );
}
