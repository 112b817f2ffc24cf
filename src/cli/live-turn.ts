import type { PrpEvent } from "../contract/kinds.js";
import { visible, visibleLines } from "./terminal-text.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- payloads are shown, not trusted: each field read is printed through visible()
type Payload = Record<string, any>;
/** Where a streamed text's continuation lines start: under its first, so no agent line can pass for one of ours. */
const STREAM_INDENT = " ".repeat(11);
const PLAN_MARK: Record<string, string> = { completed: "[x]", in_progress: "[~]", pending: "[ ]", blocked: "[!]" };

/**
 * `prp run --agent`'s live view: the agent's answer streams inline as its deltas arrive; tool
 * calls, plans, diffs, permissions and the turn's end are one line each. Only what a person
 * follows a turn by is shown; `--json` has every event. The agent writes most of it: controls
 * are shown visibly and its own lines stay indented (terminal-text.ts).
 */
export class LiveTurn {
  /** True while a streamed text is open on the current line. */
  private streaming = false;

  constructor(private readonly write: (text: string) => void) {}

  show(event: PrpEvent): void {
    const p = event.payload as Payload;
    switch (event.eventType) {
      case "harness.ready":
        return this.line(`agent    ${p.agent?.name ?? "?"} ${p.agent?.version ?? ""} (pid ${p.pid})`);
      case "session.started":
        return this.line(`session  ${p.driverSessionId}`);
      case "item.started":
        this.line(p.kind === "reasoning_summary" ? "thinking " : "answer   ", false);
        this.streaming = true;
        return;
      case "item.delta":
        return this.write(visibleLines(String(p.text ?? "")).replaceAll("\n", `\n${STREAM_INDENT}`));
      case "item.completed":
        return this.endStream();
      case "tool.execution.started":
        return this.line(`tool     ${p.name ?? p.executionId} (${p.operation})`);
      case "tool.execution.completed":
        return this.line(`tool     ${p.name ?? p.executionId}: ${p.status}`);
      case "workspace.change.updated":
        for (const f of p.files ?? [])
          this.line(`change   ${f.path} ${f.changeKind} (+${f.additions ?? "?"} -${f.deletions ?? "?"})`);
        return;
      case "plan.updated":
        this.line(`plan     revision ${p.revision}`);
        for (const s of p.steps ?? []) this.line(`         ${PLAN_MARK[s.status] ?? "[ ]"} ${s.body}`);
        return;
      case "runtime_request.created":
        return this.line(`asks     ${p.request?.prompt}`);
      case "runtime_request.resolved":
        return this.line(
          `answer   ${p.resolution?.optionKind ?? "?"} (by ${p.decidedBy?.policy ? `policy ${p.decidedBy.policy}` : (p.decidedBy?.by ?? "?")})`,
        );
      case "runtime_request.cancelled":
        return this.line(`answer   cancelled (${p.reason})`);
      case "provider.notice.recorded":
        return this.line(`notice   ${p.severity}: ${p.summary}`);
      case "harness.diagnostic":
        return this.line(`note     [${p.code}] ${p.message}`);
      case "session.failed":
      case "turn.failed":
        return this.line(`${event.eventType.padEnd(8)} ${p.message ?? p.code ?? ""}`);
      case "turn.completed":
      case "turn.interrupted":
      case "turn.cancelled":
        return this.line(`${event.eventType}${p.reason ? ` (${p.reason})` : ""}`);
      default:
        return;
    }
  }

  /** Closes an open stream line before the closing report. */
  end(): void {
    this.endStream();
  }

  private endStream(): void {
    if (this.streaming) this.write("\n");
    this.streaming = false;
  }

  private line(text: string, newline = true): void {
    this.endStream();
    this.write(`  ${visible(text)}${newline ? "\n" : ""}`);
  }
}
