import { committedTerminal } from "./run-list-query.js";

/**
 * When each command without a result was queued, oldest first, over the runs that have not
 * ended (no committed terminal, no ended dispatch: the run list's `ended`, written so that a run
 * without a dispatch row counts as not ended), `limit` the placeholder of the row limit.
 * A partial index (schema version 7) holds only the unanswered commands, in this order.
 */
export const pendingCommandTimesQuery = (limit: string): string =>
  `SELECT c.queued_at FROM commands c LEFT JOIN dispatch d ON d.run_id = c.run_id
    WHERE c.status IS NULL AND NOT ${committedTerminal("c")} AND (d.state IS NULL OR d.state <> 'ended')
    ORDER BY c.queued_at LIMIT ${limit}`;
