import { useEffect, useState } from "preact/hooks";
import { artifactUrl, fetchEvents, fetchView, type ApiRefusal, type RunView, type TimelineEvent } from "./api.js";
import { ActionsPanel } from "./actions-panel.js";
import { FailureCard } from "./failure-card.js";
import { Conversation } from "./conversation/conversation.js";
import { FollowUpForm } from "./conversation/follow-up-form.js";
import { HeaderStrip } from "./conversation/header-strip.js";
import { useCommand } from "./conversation/use-command.js";
import { EventsTab } from "./events-tab.js";
import { usePageTitle } from "./page-title.js";
import { runHref } from "./route.js";
import { Timeline } from "./timeline.js";
import { useLiveRun, WINDOW } from "./use-live-run.js";

function Refusal({ error }: { error: ApiRefusal }) {
  return (
    <p role="alert" class="refusal" data-testid="page-error">
      <code>{error.code}</code>: {error.message} <a href="#/">Back to the runs</a>
    </p>
  );
}

/** A run's page: live (timeline streamed, actions) for the store, a stepper for a replayed file. */
export function RunPage({
  runId,
  tab,
  eventSeq,
}: {
  runId: string;
  tab: "conversation" | "events";
  eventSeq: number | null;
}) {
  usePageTitle(tab === "events" ? `Events of ${runId}` : `Run ${runId}`);
  const [first, setFirst] = useState<RunView | ApiRefusal | null>(null);
  useEffect(() => {
    void fetchView(runId).then((v) => setFirst(v.ok ? v.value : v.error));
  }, [runId]);
  if (first === null) return <p role="status">Loading {runId}…</p>;
  if ("code" in first) return <Refusal error={first} />;
  return first.live ? (
    <LiveRunPage runId={runId} first={first} tab={tab} eventSeq={eventSeq} />
  ) : (
    <ReplayRun runId={runId} total={first.run.eventCount} />
  );
}

function Artifacts({ view }: { view: RunView }) {
  if (view.artifacts.length === 0) return null;
  return (
    <section aria-labelledby="artifacts-title">
      <h2 id="artifacts-title">Native execution bundle</h2>
      <ul class="artifacts">
        {view.artifacts.map((a) => (
          <li key={a.name}>
            <a href={artifactUrl(view.run.runId, a.name, true)} target="_blank" rel="noopener">
              {a.name}
            </a>{" "}
            ({a.bytes} bytes){" "}
            <a href={artifactUrl(view.run.runId, a.name, false)} download aria-label={`Download ${a.name}`}>
              download
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** The two views of a run: the conversation (the main page) and the raw event history. */
function Tabs({ runId, tab }: { runId: string; tab: "conversation" | "events" }) {
  return (
    <nav class="tabs" aria-label="Run views">
      <a href={runHref(runId)} aria-current={tab === "conversation" ? "page" : undefined}>
        Conversation
      </a>
      <a href={runHref(runId, "events")} aria-current={tab === "events" ? "page" : undefined}>
        Events
      </a>
    </nav>
  );
}

function LiveRunPage({
  runId,
  first,
  tab,
  eventSeq,
}: {
  runId: string;
  first: RunView;
  tab: "conversation" | "events";
  eventSeq: number | null;
}) {
  const live = useLiveRun(runId, first);
  const { view, streamError, refresh } = live;
  const command = useCommand(runId, refresh);
  const ended = view.session.terminal !== null || view.run.state !== "live";
  return (
    <div class="run">
      <h1>Run {runId}</h1>
      <HeaderStrip view={view} />
      <Tabs runId={runId} tab={tab} />
      {streamError && <p role="status">{streamError}</p>}
      {tab === "events" ? (
        <EventsTab live={live} focusSeq={eventSeq} />
      ) : (
        <div>
          <FailureCard view={view} />
          <Conversation view={view} command={command} />
          {!ended && <FollowUpForm view={view} command={command} />}
          <ActionsPanel view={view} command={command} />
          <Artifacts view={view} />
        </div>
      )}
    </div>
  );
}

/** Step through a replayed file event by event; the session is the reduction up to the step. */
function ReplayRun({ runId, total }: { runId: string; total: number }) {
  const [step, setStep] = useState(total);
  const [events, setEvents] = useState<TimelineEvent[]>([]);
  const [view, setView] = useState<RunView | null>(null);
  // The events around the step: a window of the file, read by range.
  const from = Math.max(0, step - WINDOW / 2);
  useEffect(() => {
    void fetchEvents(runId, from, WINDOW).then((e) => e.ok && setEvents(e.value.events));
  }, [runId, from]);
  useEffect(() => {
    void fetchView(runId, step).then((v) => v.ok && setView(v.value));
  }, [runId, step]);
  const go = (n: number) => setStep(Math.min(total, Math.max(0, n)));
  return (
    <div class="run">
      <h1>Replay of {runId}</h1>
      <div class="stepper" role="group" aria-label="Replay step">
        <button type="button" onClick={() => go(0)} disabled={step === 0}>
          First
        </button>
        <button type="button" onClick={() => go(step - 1)} disabled={step === 0}>
          Previous event
        </button>
        <label>
          Step{" "}
          <input
            type="range"
            min={0}
            max={total}
            value={step}
            onInput={(e) => go(Number((e.target as HTMLInputElement).value))}
            aria-valuetext={`event ${step} of ${total}`}
          />
        </label>
        <output data-testid="step">
          {step} / {total}
        </output>
        <button type="button" onClick={() => go(step + 1)} disabled={step === total}>
          Next event
        </button>
        <button type="button" onClick={() => go(total)} disabled={step === total}>
          Last
        </button>
      </div>
      {view && (
        <div class="columns">
          <div>
            <HeaderStrip view={view} />
            <FailureCard view={view} />
            <Conversation view={view} command={null} />
          </div>
          <Timeline events={events} total={total} current={step} />
        </div>
      )}
    </div>
  );
}
