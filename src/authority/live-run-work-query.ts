/**
 * One row per run whose id `ids` selects (a subquery of the database's own list form): its
 * revocation epoch, and whether its lowest command without a result was not sent on its current
 * connection (deliverNextCommand's test, true or false, never null). One query for every live
 * run: a full read at 10,000 runners was otherwise three round trips per run.
 */
export const liveRunWorkQuery = (ids: string): string =>
  `SELECT r.run_id, r.revocation_epoch,
     COALESCE((SELECT c.last_delivered_connection_id IS DISTINCT FROM r.current_connection_id FROM commands c
                WHERE c.run_id = r.run_id AND c.status IS NULL ORDER BY c.controller_seq LIMIT 1), FALSE) AS command_waiting
   FROM runs r WHERE r.run_id IN (${ids})`;
