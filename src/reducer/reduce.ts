import type { PRPReplayFixture, PRPRunIdentity, PrpEvent } from "../contract/index.js";
import { applyEvents } from "./apply-event.js";
import { createSnapshot, type Capabilities, type SessionSnapshot } from "./snapshot.js";

/** The snapshot of an event stream from the start. A bare stream passes null identity and capabilities. */
export const reduceEvents = (
  identity: PRPRunIdentity | null,
  capabilities: Capabilities | null,
  events: Iterable<PrpEvent>,
): SessionSnapshot => applyEvents(createSnapshot({ identity, capabilities }), events);

/**
 * The snapshot of a decoded replay fixture: its events in delivery order, nothing else. The
 * codec has checked every event against its envelope schema, hence the casts.
 */
export const reduceFixture = (fixture: PRPReplayFixture): SessionSnapshot =>
  applyEvents(
    createSnapshot({
      fixtureName: fixture.name,
      identity: fixture.identity,
      capabilities: fixture.capabilities as Capabilities,
    }),
    fixture.events as PrpEvent[],
  );
