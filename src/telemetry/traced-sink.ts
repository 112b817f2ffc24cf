import type { EventSink } from "../runner/event-sink.js";
import type { RunSpans } from "./run-spans.js";

/** A sink that hands each event it admits to the run's spans: they see exactly what the run emitted, in order. */
export function tracedSink(sink: EventSink, spans: RunSpans): EventSink {
  return {
    offer: (event) => {
      const offer = sink.offer(event);
      if (offer.kind === "admitted") spans.event(event);
      return offer;
    },
    onRoom: (resume) => sink.onRoom(resume),
  };
}
