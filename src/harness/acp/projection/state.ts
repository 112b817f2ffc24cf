import type { AgentStartCause } from "../../../agents/start-causes.js";
import { cutText } from "../../../contract/text-cut.js";
import type { HarnessFact } from "../../harness-driver.js";
import type { ProjectionContext, ViolationCode } from "./types.js";
import type { Obj } from "./wire.js";

const MAX_DIAGNOSTIC = 8 * 1024;

/**
 * What the parts of the projection share. The dispatcher owns it and hands it to each part it
 * calls, so no part holds another: the run binding, the ACP session and the bound turn, whether
 * the projection failed closed, and the facts the current input projects to.
 */
export class ProjectionState {
  /** The ACP session id, once `session/new` or `session/load` named it. */
  acpSessionId: string | null = null;
  /** The runner's turn the projection is bound to (seed 002 rule 1). */
  turnId: string | null = null;
  /** A prompt is out and not answered: the agent's turn is running. */
  turnOpen = false;
  /** Follow-ups (turn.steer) queued and not yet sent as a prompt of their own. */
  followUps = 0;
  /** The last prompt was answered with end_turn and a follow-up is queued: the turn waits for its prompt. */
  awaitingFollowUp = false;
  /** Failed closed: nothing the agent says is believed any more. */
  failed = false;
  private facts: HarnessFact[] = [];

  constructor(readonly context: ProjectionContext) {}

  /** The facts projected since the last call; the next input starts a fresh list. */
  take(): HarnessFact[] {
    const facts = this.facts;
    this.facts = [];
    return facts;
  }

  emit(fact: HarnessFact): void {
    this.facts.push(fact);
  }

  /** An event of the bound turn, on item `itemId` when given. */
  turnEvent(eventType: string, payload: Obj, itemId?: string): void {
    this.emit({
      kind: "event",
      eventType,
      payload,
      ...(this.turnId ? { turnId: this.turnId } : {}),
      ...(itemId ? { itemId } : {}),
    });
  }

  /** An event of the session, outside any turn. */
  sessionEvent(eventType: string, payload: Obj): void {
    this.emit({ kind: "event", eventType, payload });
  }

  diagnostic(code: string, message: string): void {
    this.sessionEvent("harness.diagnostic", { code, message: cutText(message, MAX_DIAGNOSTIC) });
  }

  /** Fails closed (seed 002 rule 9): the typed violation the run's terminal carries. */
  fail(message: string, code: ViolationCode): void {
    this.failed = true;
    this.emit({ kind: "violation", message, code });
  }

  /**
   * The agent cannot start the run (an agent_start cause): nothing it says is believed any more,
   * and the run ends with the cause as its stopReason, not as a protocol violation.
   */
  startFailed(code: AgentStartCause, message: string): void {
    this.failed = true;
    this.emit({ kind: "start_failed", code, message });
  }

  /** `_r1` on the ids of the first replacement agent's items and requests, `_r2` on the next; none on the first agent's. */
  generationSuffix(): string {
    const generation = this.context.generation ?? 1;
    return generation > 1 ? `_r${generation - 1}` : "";
  }
}
