import { Timeline } from "./timeline.js";
import type { LiveRun } from "./use-live-run.js";

/** A run's event history: every event in order, each one openable to its payload. */
export function EventsTab({ live }: { live: LiveRun; focusSeq: number | null }) {
  return (
    <Timeline
      events={live.rows}
      total={live.view.run.eventCount}
      onFollow={live.setFollowing}
      onEarlier={() => void live.showEarlier()}
      canShowEarlier={live.canShowEarlier}
    />
  );
}
