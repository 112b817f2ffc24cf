import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { createRun, fetchAgents, labelPair, type AgentList, type ApiRefusal, type RunSpec } from "./api.js";
import { usePageTitle } from "./page-title.js";
import { runHref } from "./route.js";
import "./new-run-form.css";

type Kind = "fake" | "profile" | "command";

interface Fields {
  kind: Kind;
  script: string;
  profile: string;
  command: string;
  /** An ACP agent's permission requests: put to the person (ask), or answered by the runner's rule. */
  policy: string;
  prompt: string;
  workspace: string;
  labels: string;
  priority: string;
}

/** The field a refusal's `path` (a JSON pointer into the RunSpec) is about: the one to mark and focus. */
const FIELD_OF_PATH: Array<[RegExp, string]> = [
  [/^\/agent\/script/, "agent-script"],
  [/^\/agent\/profile/, "agent-profile"],
  [/^\/agent\/command/, "agent-command"],
  [/^\/agent/, "agent-kind"],
  [/^\/permissionPolicy/, "permission-policy"],
  [/^\/prompt/, "prompt"],
  [/^\/workspace/, "workspace"],
  [/^\/labels/, "labels"],
  [/^\/priority/, "priority"],
];
const fieldOf = (path: string | undefined) => FIELD_OF_PATH.find(([re]) => re.test(path ?? ""))?.[1] ?? null;

/** `k=v, k=v` as a RunSpec's labels, or the refusal of the first item that is not one. */
function parseLabels(text: string): { labels: Record<string, string> } | { error: ApiRefusal } {
  const labels: Record<string, string> = {};
  for (const item of text.split(",").map((s) => s.trim())) {
    if (item === "") continue;
    const pair = labelPair(item);
    if (pair === null)
      return { error: { code: "invalid_label", path: "/labels", message: `"${item}" is not key=value` } };
    Object.assign(labels, pair);
  }
  return { labels };
}

/** The RunSpec the fields ask for, or why they do not make one. */
function specOf(f: Fields): { spec: RunSpec } | { error: ApiRefusal } {
  const labels = parseLabels(f.labels);
  if ("error" in labels) return labels;
  const agent: RunSpec["agent"] =
    f.kind === "fake"
      ? { kind: "fake", script: f.script }
      : f.kind === "profile"
        ? { kind: "profile", profile: f.profile }
        : { kind: "command", command: f.command.trim() };
  const spec: RunSpec = { agent };
  // A fake script asks what it asks: the API refuses a policy for it.
  if (f.kind !== "fake") spec.permissionPolicy = f.policy as NonNullable<RunSpec["permissionPolicy"]>;
  if (f.prompt.trim() !== "") spec.prompt = f.prompt;
  if (f.workspace.trim() !== "") spec.workspace = f.workspace.trim();
  if (Object.keys(labels.labels).length > 0) spec.labels = labels.labels;
  if (f.priority.trim() !== "") spec.priority = Number(f.priority);
  return { spec };
}

const newKey = () =>
  `console-${Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("")}`;

/**
 * Start a run: its agent (a fake-harness script, a named profile, or an ACP command line, the
 * choices from GET /v1/agents), prompt, workspace, labels and priority, sent as POST /v1/runs.
 * The same request sent again (a double click, a retry) carries the same Idempotency-Key, so it
 * finds the run the first one created; a changed form is a new request with a new key.
 */
export function NewRunForm() {
  usePageTitle("New run");
  const [agents, setAgents] = useState<AgentList | null>(null);
  const [agentsRefused, setAgentsRefused] = useState<ApiRefusal | null>(null);
  const [f, setF] = useState<Fields>({
    kind: "fake",
    script: "",
    profile: "",
    command: "",
    policy: "ask",
    prompt: "",
    workspace: "",
    labels: "",
    priority: "0",
  });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiRefusal | null>(null);
  const sent = useRef<{ body: string; key: string } | null>(null);
  const form = useRef<HTMLFormElement>(null);

  useEffect(() => {
    void fetchAgents().then((answer) => {
      if (!answer.ok) return setAgentsRefused(answer.error);
      setAgents(answer.value);
      const scripts = answer.value.scripts;
      setF((old) => ({
        ...old,
        script: old.script || (scripts.includes("happy-path") ? "happy-path" : (scripts[0] ?? "")),
        profile: old.profile || (answer.value.profiles[0]?.name ?? ""),
      }));
    });
  }, []);

  const invalid = fieldOf(error?.path);
  // In the commit that marks the field: a plain effect runs a frame later, and meanwhile the
  // error is on screen while the focus is still on the button.
  useLayoutEffect(() => {
    if (invalid !== null) form.current?.querySelector<HTMLElement>(`#${invalid}`)?.focus();
  }, [error]);

  const set = (key: keyof Fields) => (e: Event) =>
    setF({ ...f, [key]: (e.currentTarget as HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement).value });
  const mark = (id: string) =>
    invalid === id ? { "aria-invalid": true as const, "aria-describedby": "form-error" } : {};

  const submit = async (e: Event) => {
    e.preventDefault();
    const asked = specOf(f);
    if ("error" in asked) return setError(asked.error);
    const body = JSON.stringify(asked.spec);
    if (sent.current?.body !== body) sent.current = { body, key: newKey() };
    setBusy(true);
    setError(null);
    const answer = await createRun(asked.spec, sent.current.key);
    setBusy(false);
    if (answer.ok) location.hash = runHref(answer.value);
    else setError(answer.error);
  };

  return (
    <>
      <h1>New run</h1>
      {agentsRefused && (
        <p role="alert" class="refusal">
          The agents could not be listed: <code>{agentsRefused.code}</code>: {agentsRefused.message}
        </p>
      )}
      <form ref={form} class="new-run" data-testid="new-run-form" onSubmit={(e) => void submit(e)}>
        <div class="field">
          <label for="agent-kind">Agent</label>
          <select
            id="agent-kind"
            data-testid="agent-kind"
            value={f.kind}
            onChange={set("kind")}
            {...mark("agent-kind")}
          >
            <option value="fake">Fake harness script</option>
            <option value="profile">Named agent profile</option>
            <option value="command">ACP agent command line</option>
          </select>
        </div>
        {f.kind === "fake" && (
          <div class="field">
            <label for="agent-script">Script</label>
            <select
              id="agent-script"
              data-testid="agent-script"
              required
              value={f.script}
              onChange={set("script")}
              {...mark("agent-script")}
            >
              {agents?.scripts.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </div>
        )}
        {f.kind === "profile" && (
          <div class="field">
            <label for="agent-profile">Profile</label>
            <select
              id="agent-profile"
              data-testid="agent-profile"
              required
              value={f.profile}
              onChange={set("profile")}
              {...mark("agent-profile")}
            >
              {agents?.profiles.map((p) => (
                <option key={p.name} value={p.name}>
                  {p.name}: {p.title}
                </option>
              ))}
            </select>
          </div>
        )}
        {f.kind === "command" && (
          <div class="field">
            <label for="agent-command">Command line</label>
            <input
              id="agent-command"
              data-testid="agent-command"
              required
              maxLength={4096}
              placeholder="npx some-acp-agent --flag"
              value={f.command}
              onInput={set("command")}
              {...mark("agent-command")}
            />
          </div>
        )}
        {f.kind !== "fake" && (
          <div class="field">
            <label for="permission-policy">Who answers the agent's permission requests and questions</label>
            <select
              id="permission-policy"
              data-testid="permission-policy"
              value={f.policy}
              onChange={set("policy")}
              {...mark("permission-policy")}
            >
              <option value="ask">ask me on this page</option>
              <option value="allow-reads">the runner: allow reads, deny the rest (questions cancelled)</option>
              <option value="deny">the runner: deny each one (questions cancelled)</option>
              <option value="forbid">nobody: the first request fails the run</option>
            </select>
          </div>
        )}
        <div class="field">
          <label for="prompt">Prompt</label>
          <textarea
            id="prompt"
            data-testid="prompt"
            required
            rows={6}
            maxLength={65536}
            value={f.prompt}
            onInput={set("prompt")}
            {...mark("prompt")}
          />
        </div>
        <div class="field">
          <label for="workspace">Workspace</label>
          <input
            id="workspace"
            data-testid="workspace"
            placeholder="default"
            maxLength={160}
            value={f.workspace}
            onInput={set("workspace")}
            {...mark("workspace")}
          />
        </div>
        <div class="field">
          <label for="labels">Labels</label>
          <input
            id="labels"
            data-testid="labels"
            placeholder="team=blue, os=linux"
            aria-describedby={invalid === "labels" ? "form-error labels-hint" : "labels-hint"}
            aria-invalid={invalid === "labels" || undefined}
            value={f.labels}
            onInput={set("labels")}
          />
          <span id="labels-hint" class="hint">
            key=value, separated by commas; a worker claims the run only if it holds them all.
          </span>
        </div>
        <div class="field">
          <label for="priority">Priority</label>
          <input
            id="priority"
            data-testid="priority"
            type="number"
            min={-1000}
            max={1000}
            step={1}
            value={f.priority}
            onInput={set("priority")}
            {...mark("priority")}
          />
        </div>
        {error && (
          <p id="form-error" role="alert" class="refusal" data-testid="form-error">
            <code>{error.code}</code>: {error.message}
          </p>
        )}
        <div class="buttons">
          <button type="submit" data-testid="start-run" disabled={busy || agents === null}>
            {busy ? "Starting…" : "Start the run"}
          </button>
        </div>
      </form>
    </>
  );
}
