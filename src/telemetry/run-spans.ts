import { ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Span, type Tracer } from "@opentelemetry/api";

/** The ids every span of a run carries. */
export interface RunSpanIds {
  runId: string;
  runnerId: string;
  sessionId: string;
}

/** An event the runner has emitted, as far as its spans need it. */
export interface SpanEvent {
  eventType: string;
  payload: Record<string, unknown>;
  turnId?: string;
  itemId?: string;
}

/** A command's span: it ends with how the command went. */
export interface CommandSpan {
  applied(): void;
  refused(code: string): void;
}

/** Agent-controlled strings (ids, kinds) are cut to this many characters in attributes. */
export const MAX_ATTRIBUTE_CHARS = 128;
/** Tool calls open at once: beyond this a tool call gets no span (a hostile agent cannot grow this without bound). */
export const MAX_OPEN_TOOL_CALLS = 256;

const TURN_ENDS = new Set(["turn.completed", "turn.failed", "turn.interrupted", "turn.cancelled"]);

const capped = (value: unknown): string | undefined =>
  typeof value === "string" ? value.slice(0, MAX_ATTRIBUTE_CHARS) : undefined;

/**
 * The spans of one run, fed by the events the runner emits and the commands it takes:
 * `prp.run` (start to run.terminal), `prp.turn` (turn.started to its end), `prp.tool_call`
 * (item.started to item.completed/failed, keyed by the item id) and `prp.command <type>`.
 * Attributes carry ids and outcomes only, never prompt text or tool output.
 */
export class RunSpans {
  private readonly run: Span;
  private readonly runContext: Context;
  private turn: { span: Span; context: Context } | null = null;
  private readonly toolCalls = new Map<string, Span>();
  private ended = false;

  constructor(
    private readonly ids: RunSpanIds,
    private readonly tracer: Tracer = trace.getTracer("prp-runner"),
    parent: Context = ROOT_CONTEXT,
  ) {
    this.run = tracer.startSpan("prp.run", { attributes: this.idAttributes() }, parent);
    this.runContext = trace.setSpan(parent, this.run);
  }

  /** One event the sink admitted. */
  event(event: SpanEvent): void {
    if (this.ended) return;
    const type = event.eventType;
    if (type === "turn.started") this.startTurn(capped(event.turnId ?? event.payload.turnId));
    else if (TURN_ENDS.has(type)) this.endTurn(type.slice("turn.".length));
    else if (type === "item.started" && event.itemId !== undefined)
      this.startToolCall(event.itemId, event.payload.kind);
    else if ((type === "item.completed" || type === "item.failed") && event.itemId !== undefined)
      this.endToolCall(event.itemId, type.slice("item.".length));
    else if (type === "run.terminal") this.end(event.payload);
  }

  /** A command the runner has admitted: the span ends when it is applied or refused. */
  command(command: { commandId: string; type: string }): CommandSpan {
    const span = this.tracer.startSpan(
      `prp.command ${capped(command.type)}`,
      {
        attributes: {
          ...this.idAttributes(),
          "prp.command.id": capped(command.commandId)!,
          "prp.command.type": capped(command.type)!,
        },
      },
      this.turn?.context ?? this.runContext,
    );
    return {
      applied: () => {
        span.setAttribute("prp.outcome", "applied");
        span.end();
      },
      refused: (code) => {
        span.setAttribute("prp.outcome", "refused");
        span.setAttribute("prp.refusal.code", capped(code)!);
        span.end();
      },
    };
  }

  /** The runner closes without a terminal it saw (suspended, or gone): whatever is open ends. */
  close(): void {
    if (!this.ended) this.end(null);
  }

  private idAttributes() {
    return {
      "prp.run.id": this.ids.runId,
      "prp.runner.id": this.ids.runnerId,
      "prp.session.id": this.ids.sessionId,
    };
  }

  private startTurn(turnId: string | undefined): void {
    this.endTurn("superseded");
    const span = this.tracer.startSpan(
      "prp.turn",
      { attributes: { ...this.idAttributes(), ...(turnId ? { "prp.turn.id": turnId } : {}) } },
      this.runContext,
    );
    this.turn = { span, context: trace.setSpan(this.runContext, span) };
  }

  private endTurn(outcome: string): void {
    if (!this.turn) return;
    this.turn.span.setAttribute("prp.outcome", outcome);
    if (outcome === "failed") this.turn.span.setStatus({ code: SpanStatusCode.ERROR, message: "turn failed" });
    this.turn.span.end();
    this.turn = null;
  }

  private startToolCall(itemId: string, kind: unknown): void {
    if (this.toolCalls.has(itemId) || this.toolCalls.size >= MAX_OPEN_TOOL_CALLS) return;
    const itemKind = capped(kind);
    const span = this.tracer.startSpan(
      "prp.tool_call",
      {
        attributes: {
          ...this.idAttributes(),
          "prp.item.id": capped(itemId)!,
          ...(itemKind ? { "prp.item.kind": itemKind } : {}),
        },
      },
      this.turn?.context ?? this.runContext,
    );
    this.toolCalls.set(itemId, span);
  }

  private endToolCall(itemId: string, outcome: string): void {
    const span = this.toolCalls.get(itemId);
    if (!span) return;
    this.toolCalls.delete(itemId);
    span.setAttribute("prp.outcome", outcome);
    if (outcome === "failed") span.setStatus({ code: SpanStatusCode.ERROR, message: "tool call failed" });
    span.end();
  }

  private end(terminal: Record<string, unknown> | null): void {
    this.ended = true;
    for (const itemId of [...this.toolCalls.keys()]) this.endToolCall(itemId, "unfinished");
    this.endTurn(terminal ? "unfinished" : "closed");
    const state = capped(terminal?.runTerminalState) ?? "closed";
    this.run.setAttribute("prp.outcome", state);
    const reason = capped((terminal?.reconciliation as Record<string, unknown> | undefined)?.reason);
    if (reason) this.run.setAttribute("prp.terminal.reason", reason);
    if (state === "failed") this.run.setStatus({ code: SpanStatusCode.ERROR, message: "run failed" });
    this.run.end();
  }
}
