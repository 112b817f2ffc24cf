import type { ComponentChildren } from "preact";
import type { CommandReceipt, FileChange, RunView } from "../api.js";
import { commandState } from "../command-outcome.js";
import { TurnFileChanges } from "./file-changes.js";
import { MessageItem, UserMessage } from "./message-item.js";
import { RequestCard } from "./request-card.js";
import { ToolCallCard } from "./tool-call-card.js";
import type { RunCommands } from "./use-command.js";

/** One line of the conversation, keyed so that Preact keeps its DOM (an open <details>) across updates. */
export interface Entry {
  key: string;
  node: ComponentChildren;
}

/** What became of a person's message when the runner did not take it (rejected, failed), in words. */
const fate = (c: CommandReceipt) => (c.status === null || c.status === "completed" ? null : commandState(c));

/** The requests still waiting for an answer: pending, and no answer queued that the runner has not rejected. */
function waitingRequests(view: RunView) {
  const ended = view.session.terminal !== null || view.run.state !== "live";
  if (ended) return new Map<string, RunView["requests"][number]>();
  const answered = new Set(
    view.commands.filter((c) => c.type === "request.resolve" && c.status !== "rejected").map((c) => c.requestId),
  );
  return new Map(view.requests.filter((r) => !answered.has(r.requestId)).map((r) => [r.requestId, r]));
}

/** The run's diffs: by the tool execution they belong to, and by turn for the rest (a turn-level change). */
function changesOf(view: RunView, tools: ReadonlySet<string>) {
  const byTool = new Map<string, FileChange[]>();
  const byTurn = new Map<string | null, FileChange[]>();
  const add = <K,>(map: Map<K, FileChange[]>, key: K, c: FileChange) => map.set(key, [...(map.get(key) ?? []), c]);
  for (const c of view.fileChanges ?? []) {
    if (c.itemId !== null && tools.has(c.itemId)) add(byTool, c.itemId, c);
    else add(byTurn, view.turns.some((t) => t.turnId === c.turnId) ? c.turnId : null, c);
  }
  return { byTool, byTurn };
}

/**
 * The conversation in order, turn by turn: what the person said (each turn's turn.start, the
 * run's prompt), the turn's items and tool calls as they first appeared, its requests (a form
 * while one waits), and the follow-ups steered into it. Items no turn names come first; a
 * message or a request no turn holds yet, last.
 */
export function conversationEntries(view: RunView, command: RunCommands | null): Entry[] {
  const { session: s } = view;
  const items = new Map(s.items.map((i) => [i.itemId, i]));
  const tools = new Map((s.toolExecutions ?? []).map((t) => [String(t.executionId), t]));
  const asked = new Map(s.requests.map((r) => [r.requestId, r]));
  const waiting = waitingRequests(view);
  const changes = changesOf(view, new Set(tools.keys()));
  const said = (type: string) =>
    view.commands
      .filter((c) => c.type === type && typeof c.text === "string")
      .sort((a, b) => a.controllerSeq - b.controllerSeq);
  const starts: Array<{ key: string; text: string; note: string | null }> = said("turn.start").map((c) => ({
    key: c.commandId,
    text: c.text!,
    note: fate(c),
  }));
  if (starts.length === 0 && view.spec?.prompt) starts.push({ key: "prompt", text: view.spec.prompt, note: null });
  const steers = said("turn.steer").map((c) => ({ key: c.commandId, text: c.text!, note: fate(c) }));

  const entries: Entry[] = [];
  const shown = new Set<string>();
  const itemEntry = (id: string) => {
    shown.add(id);
    const item = items.get(id);
    if (item) return entries.push({ key: `item:${id}`, node: <MessageItem item={item} /> });
    const tool = tools.get(id);
    if (tool) entries.push({ key: `tool:${id}`, node: <ToolCallCard tool={tool} changes={changes.byTool.get(id)} /> });
  };
  const requestEntry = (id: string) => {
    shown.add(id);
    const from = `answer:${id}` as const;
    entries.push({
      key: `request:${id}`,
      node: (
        <RequestCard
          asked={asked.get(id)}
          pending={command ? waiting.get(id) : undefined}
          busy={command?.busy ?? true}
          onAnswer={(resolution) =>
            void command?.send(from, "request.resolve", {
              requestId: id,
              ...(s.activeTurnId ? { turnId: s.activeTurnId } : {}),
              resolution,
            })
          }
          outcome={command?.outcomeFor(from) ?? null}
          commands={view.commands}
        />
      ),
    });
  };
  const turnChanges = (turnId: string | null) => {
    const own = changes.byTurn.get(turnId);
    if (own) entries.push({ key: `changes:${turnId ?? ""}`, node: <TurnFileChanges changes={own} /> });
  };
  const userEntry = (m: { key: string; text: string; note: string | null }) =>
    entries.push({ key: `said:${m.key}`, node: <UserMessage text={m.text} note={m.note} /> });

  const inTurns = new Set(view.turns.flatMap((t) => [...t.items, ...t.requests]));
  for (const id of [...items.keys(), ...tools.keys()]) if (!inTurns.has(id)) itemEntry(id);
  view.turns.forEach((turn, i) => {
    const start = starts[i];
    if (start) userEntry(start);
    turn.items.forEach(itemEntry);
    turn.requests.forEach(requestEntry);
    turnChanges(turn.turnId);
    if (i === view.turns.length - 1) steers.forEach(userEntry);
  });
  starts.slice(view.turns.length).forEach(userEntry);
  if (view.turns.length === 0) steers.forEach(userEntry);
  for (const id of new Set([...asked.keys(), ...waiting.keys()])) if (!shown.has(id)) requestEntry(id);
  turnChanges(null);
  return entries;
}
