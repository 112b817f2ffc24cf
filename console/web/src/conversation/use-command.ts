import { useState } from "preact/hooks";
import { sendCommand } from "../api.js";
import type { Outcome } from "../command-outcome.js";

/** Where on the page a command was sent from (a request's answer names the request): its receipt is shown there, and only there. */
export type Sender = `answer:${string}` | "follow-up" | "action";

/** Sends a run's commands; the last one's receipt or refusal, for the part of the page that sent it. */
export interface RunCommands {
  busy: boolean;
  send: (from: Sender, type: string, payload: Record<string, unknown>) => Promise<boolean>;
  outcomeFor: (from: Sender) => Outcome;
}

export function useCommand(runId: string, onSent: () => void): RunCommands {
  const [last, setLast] = useState<{ from: Sender; outcome: Outcome } | null>(null);
  const [busy, setBusy] = useState(false);
  const send = async (from: Sender, type: string, payload: Record<string, unknown>) => {
    setBusy(true);
    const sent = await sendCommand(runId, type, payload);
    setBusy(false);
    setLast({ from, outcome: sent.ok ? { receipt: sent.value.receipt } : { error: sent.error } });
    if (sent.ok) onSent();
    return sent.ok;
  };
  return { busy, send, outcomeFor: (from) => (last?.from === from ? last.outcome : null) };
}
