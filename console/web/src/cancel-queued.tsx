import { useState } from "preact/hooks";
import { cancelRun, type ApiRefusal } from "./api.js";

/**
 * Cancel of a queued run, in its row: asks to be confirmed first (the run is gone from the
 * queue at once), then says what the API refused, if it did. `onCancelled` reads the list again.
 */
export function CancelQueued({ runId, onCancelled }: { runId: string; onCancelled: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [refused, setRefused] = useState<ApiRefusal | null>(null);
  const cancel = async () => {
    setBusy(true);
    const answer = await cancelRun(runId);
    setBusy(false);
    setConfirming(false);
    if (answer.ok) onCancelled();
    else setRefused(answer.error);
  };
  return (
    <div class="cancel-queued">
      {confirming ? (
        <>
          <button
            type="button"
            class="danger"
            disabled={busy}
            data-testid="confirm-cancel"
            aria-label={`Confirm cancel of run ${runId}`}
            onClick={() => void cancel()}
          >
            Confirm cancel
          </button>
          <button type="button" disabled={busy} onClick={() => setConfirming(false)}>
            Keep it
          </button>
        </>
      ) : (
        <button
          type="button"
          data-testid="cancel-queued"
          aria-label={`Cancel queued run ${runId}`}
          onClick={() => (setRefused(null), setConfirming(true))}
        >
          Cancel
        </button>
      )}
      {refused && (
        <p role="alert" class="refusal">
          <code>{refused.code}</code>: {refused.message}
        </p>
      )}
    </div>
  );
}
