/**
 * The HTTP API v1's own request and response schemas (JSON Schema 2020-12): the single source
 * of the server's validation, the OpenAPI document (openapi.ts) and the client's types
 * (generated/types.ts, `npm run generate:api`). Refs between them are `#/$defs/Name`; the
 * OpenAPI document moves them under `#/components/schemas/`. A committed event is described by
 * the contract's own event schemas, which the document embeds beside these.
 */

const ID = { type: "string", minLength: 1, maxLength: 160, pattern: "^[^\\u0000-\\u001f\\u007f]+$" } as const;

const LABELS = {
  description:
    "Labels a run carries, for filtering (and for the workers that will claim runs by label): at most 32, each key a lowercase name.",
  type: "object",
  maxProperties: 32,
  propertyNames: { pattern: "^[a-z0-9][a-z0-9_.-]{0,62}$" },
  additionalProperties: { type: "string", maxLength: 256, pattern: "^[^\\u0000-\\u001f\\u007f]*$" },
} as const;

/** Agent profile names a worker advertises (the catalog's name pattern): it holds `agent=<name>` for each. */
const AGENTS = {
  description:
    "The agent profiles the worker can run now (catalog names): for the label rule it holds `agent=<name>` for each, beside its labels.",
  type: "array",
  maxItems: 32,
  uniqueItems: true,
  items: { type: "string", pattern: "^[a-z][a-z0-9-]{0,31}$" },
} as const;

const TIME = { type: "string", format: "date-time" } as const;
/** An event's emittedAt as the runner wrote it (checked by the contract on the way in), or null. */
const NULLABLE_TIME = { type: ["string", "null"] } as const;

export const API_SCHEMAS = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  $id: "https://paperclip.dev/prp-kit/api/v1/schemas.json",
  $defs: {
    Error: {
      title: "Error",
      description: "Every refusal: what was refused, where in the request, and what to do about it.",
      type: "object",
      additionalProperties: false,
      required: ["code", "message"],
      properties: {
        code: { type: "string", description: "A stable, machine-readable code, e.g. run_ended, token_invalid." },
        message: { type: "string", description: "What a person can act on." },
        path: { type: "string", description: "A JSON pointer into the request, when one part of it was refused." },
      },
    },
    Agent: {
      title: "Agent",
      description:
        "What the run drives: the fake harness playing a script (by catalog name), an ACP agent started from a command line, or a named agent profile.",
      oneOf: [
        {
          type: "object",
          additionalProperties: false,
          required: ["kind", "script"],
          properties: { kind: { const: "fake" }, script: { ...ID, description: "A fake-harness script name." } },
        },
        {
          type: "object",
          additionalProperties: false,
          required: ["kind", "command"],
          properties: {
            kind: { const: "command" },
            command: { type: "string", minLength: 1, maxLength: 4096, description: "The ACP agent's command line." },
          },
        },
        {
          type: "object",
          additionalProperties: false,
          required: ["kind", "profile"],
          properties: { kind: { const: "profile" }, profile: { ...ID, description: "A named agent profile." } },
        },
      ],
    },
    RunSpec: {
      title: "RunSpec",
      description: "POST /v1/runs: the run to create. Closed: an unknown member is refused.",
      type: "object",
      additionalProperties: false,
      required: ["agent"],
      properties: {
        agent: { $ref: "#/$defs/Agent" },
        prompt: {
          type: "string",
          minLength: 1,
          maxLength: 65536,
          description: "The first turn's text: queued as turn.start after run.prepare and session.open.",
        },
        workspace: { ...ID, description: "run.prepare's workspace; default `default`." },
        labels: LABELS,
        priority: { type: "integer", minimum: -1000, maximum: 1000, description: "Higher first; default 0." },
        protocolVersion: {
          type: "integer",
          minimum: 1,
          maximum: 3,
          description: "The run's protocol version; its runner must offer exactly 1–N. Default 3.",
        },
        observeCredentials: { type: "boolean", description: "run.prepare opts in to auth.credentials.updated." },
        permissionPolicy: {
          enum: ["ask", "deny", "allow-reads", "forbid"],
          description:
            "An ACP agent's (command or profile) permission requests and questions: ask (a person answers, by request.resolve), deny (refuse each one), allow-reads (allow read and search, refuse the rest), forbid (a request fails the run). Default: the runner's own (deny). Refused for a fake-harness run, whose script asks what it asks.",
        },
        stallLimitMs: {
          type: "integer",
          minimum: 0,
          maximum: 604_800_000,
          description:
            "How long the turn may report no progress (no event, no tool update; an open request pauses the clock) before the run stalls: a runner.diagnostic run_stalled, an interrupt, then a cancel after stallGraceMs; the terminal's stopReason.code is `stalled`. 0 turns the watch off. Default: the runner's own (15 min).",
        },
        stallGraceMs: {
          type: "integer",
          minimum: 0,
          maximum: 3_600_000,
          description:
            "After a stall's interrupt, how long until the run is cancelled. Default: the runner's own (30 s).",
        },
      },
    },
    RunState: {
      title: "RunState",
      description:
        "queued: waiting for a worker (dispatch.waiting says why); claimed: a worker (or a person) holds it, no event yet; pending: registered by hand, no event yet; running: events, no terminal; ended: run.terminal committed, or its dispatch ended (dispatch.endReason).",
      enum: ["queued", "claimed", "pending", "running", "ended"],
    },
    Identity: {
      title: "Identity",
      type: "object",
      additionalProperties: false,
      required: ["runnerInstanceId", "environmentLeaseId", "runId", "normalizedSessionId", "turnId", "itemId"],
      properties: {
        runnerInstanceId: ID,
        environmentLeaseId: ID,
        runId: ID,
        normalizedSessionId: ID,
        turnId: ID,
        itemId: ID,
      },
    },
    RunSummary: {
      title: "RunSummary",
      description: "A run as the list shows it.",
      type: "object",
      additionalProperties: false,
      required: [
        "runId",
        "state",
        "protocolVersion",
        "eventCount",
        "createdAt",
        "labels",
        "priority",
        "spec",
        "harness",
        "startedAt",
        "lastEventAt",
        "terminalState",
        "disposition",
        "dispatch",
        "pendingRequests",
      ],
      properties: {
        runId: ID,
        state: { $ref: "#/$defs/RunState" },
        protocolVersion: { type: "integer", minimum: 1 },
        eventCount: { type: "integer", minimum: 0, description: "Committed events: the run's acknowledged sourceSeq." },
        createdAt: TIME,
        labels: LABELS,
        priority: { type: "integer" },
        spec: {
          description: "What the run was created from; null for a run registered by `prp authority run create`.",
          oneOf: [{ $ref: "#/$defs/RunSpec" }, { type: "null" }],
        },
        harness: {
          description: "The harness command the runner started (harness.starting); null before it.",
          type: ["string", "null"],
        },
        startedAt: { description: "The emittedAt of the run's first event; null before it.", ...NULLABLE_TIME },
        lastEventAt: { description: "The emittedAt of the run's latest event; null before it.", ...NULLABLE_TIME },
        terminalState: {
          description: "run.terminal's runTerminalState (succeeded, failed, cancelled, …); null until it is committed.",
          type: ["string", "null"],
        },
        disposition: {
          description: "The result's reportedWorkDisposition: the terminal's, else the latest proposed result's.",
          type: ["string", "null"],
        },
        dispatch: {
          description: "Its place in the run queue; null for a run not created through the API.",
          oneOf: [{ $ref: "#/$defs/Dispatch" }, { type: "null" }],
        },
        pendingRequests: {
          type: "integer",
          minimum: 0,
          description:
            "Requests the harness asked (permissions, questions) that are not yet resolved, expired or cancelled: a person may be needed. 0 once the run has ended.",
        },
      },
    },
    Run: {
      title: "Run",
      description:
        "GET /v1/runs/{runId}: the run's state, its reduced session, its result and terminal (null until they exist), the forms of its pending requests and why it failed. With `?upto=N`, the session, requests and failure are those of its first N events.",
      type: "object",
      additionalProperties: false,
      required: [
        "run",
        "identity",
        "position",
        "session",
        "result",
        "terminal",
        "requests",
        "failure",
        "turns",
        "fileChanges",
        "commands",
      ],
      properties: {
        run: { $ref: "#/$defs/RunSummary" },
        identity: { $ref: "#/$defs/Identity" },
        position: {
          type: "integer",
          minimum: 0,
          description: "The events reduced: the run's event count, or `upto` when it asked for fewer.",
        },
        session: {
          type: "object",
          description:
            "The reducer's session snapshot of the events up to `position` (runtime.md §4), without its per-event lists (timeline, processedEventIds). Bounded: each of its `items` carries only the last 4,000 characters of its `text`, and its full length in `textLength`.",
          required: ["items"],
          properties: {
            items: {
              type: "array",
              items: {
                type: "object",
                required: ["text", "textLength"],
                properties: {
                  text: { type: "string", maxLength: 4000, description: "The end of the item's text." },
                  textLength: { type: "integer", minimum: 0, description: "The whole text's length." },
                },
              },
            },
          },
        },
        result: { description: "The session's result, when the run has reported one.", type: ["object", "null"] },
        terminal: { description: "The payload of the run's run.terminal event.", type: ["object", "null"] },
        requests: {
          description: "The requests still pending, as the harness asked them: what a form needs to answer each.",
          type: "array",
          items: { $ref: "#/$defs/RequestDetail" },
        },
        failure: { $ref: "#/$defs/FailureFacts" },
        turns: {
          description: "The run's turns in event order (the last 20), each with its items and requests.",
          type: "array",
          items: { $ref: "#/$defs/Turn" },
        },
        fileChanges: {
          description:
            "The run's workspace diffs (workspace.change.updated, workspace.diff.recorded), in order of first appearance (the last 50), each as its latest event said it.",
          type: "array",
          items: { $ref: "#/$defs/FileChange" },
        },
        commands: { type: "array", items: { $ref: "#/$defs/CommandReceipt" } },
      },
    },
    Turn: {
      title: "Turn",
      description: "One turn of a run, folded from the events whose envelope names it.",
      type: "object",
      additionalProperties: false,
      required: ["turnId", "state", "items", "requests"],
      properties: {
        turnId: { type: "string" },
        state: { enum: ["submitted", "running", "completed", "failed", "interrupted", "cancelled"] },
        items: {
          description:
            "Its items (session.items' itemId) and tool executions (session.toolExecutions' executionId), in order of first appearance; the last 200.",
          type: "array",
          items: { type: "string" },
        },
        requests: {
          description: "Its runtime requests' ids, in the order asked; the last 200.",
          type: "array",
          items: { type: "string" },
        },
      },
    },
    FileChange: {
      title: "FileChange",
      description:
        "One workspace diff of a run: the files it names and, when the run carried its body (output.body.chunk), the start of its text.",
      type: "object",
      additionalProperties: false,
      required: ["diffId", "itemId", "turnId", "complete", "files", "diff", "diffBytes", "diffTruncated"],
      properties: {
        diffId: { type: "string" },
        itemId: {
          description:
            "The tool execution it belongs to (its event's itemId: an executionId); null for a turn-level change.",
          type: ["string", "null"],
        },
        turnId: { type: ["string", "null"] },
        complete: { type: "boolean", description: "Whether the diff is final (workspace.diff.recorded)." },
        files: {
          description: "The files it names (the first 200), as the agent named them: text, not a trusted path.",
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["path", "changeKind", "previousPath", "additions", "deletions"],
            properties: {
              path: { type: "string", maxLength: 4096 },
              changeKind: { enum: ["added", "modified", "deleted", "renamed"] },
              previousPath: { type: ["string", "null"], maxLength: 4096 },
              additions: { type: ["integer", "null"], minimum: 0, description: "Lines added, when the event says." },
              deletions: { type: ["integer", "null"], minimum: 0, description: "Lines removed, when the event says." },
            },
          },
        },
        diff: {
          description:
            "The first 65,536 characters of the diff's text, from its body's chunks as they arrived; null when the diff has no body (an ACP diff).",
          type: ["string", "null"],
          maxLength: 65536,
        },
        diffBytes: { description: "The body's whole length in bytes; null without a body.", type: ["integer", "null"] },
        diffTruncated: { description: "Whether `diff` is less than the whole body.", type: "boolean" },
      },
    },
    RequestDetail: {
      title: "RequestDetail",
      description: "A request as runtime_request.created asked it.",
      type: "object",
      additionalProperties: false,
      required: ["requestId", "type", "prompt", "choices", "input"],
      properties: {
        requestId: { type: "string" },
        type: { type: "string", description: "permission, input, …" },
        prompt: { type: "string" },
        choices: {
          description:
            "A permission's choices, in the harness's order; an answer names one with the action it means (allow_always: accept_for_session).",
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["key", "label"],
            properties: { key: { type: "string" }, label: { type: "string" } },
          },
        },
        input: {
          description:
            "A structured question set (paperclip.question_set.v1), answered with action submit and a question response; else null.",
          type: ["object", "null"],
        },
      },
    },
    FailureFacts: {
      title: "FailureFacts",
      description: "Why a run failed, in words: the last 20 failure messages and diagnostics, and the harness's exit.",
      type: "object",
      additionalProperties: false,
      required: ["messages", "diagnostics", "harnessExit"],
      properties: {
        messages: {
          description: "`eventType: message` of failed turns, sessions and items.",
          type: "array",
          items: { type: "string" },
        },
        diagnostics: {
          description: "harness.diagnostic and runner.diagnostic payloads.",
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["eventType", "code", "message"],
            properties: { eventType: { type: "string" }, code: { type: "string" }, message: { type: "string" } },
          },
        },
        harnessExit: {
          description: "The harness's last exit (harness.exited), with the tail of its stderr; null before one.",
          oneOf: [
            { type: "null" },
            {
              type: "object",
              additionalProperties: false,
              required: ["exitCode", "signal", "stderrTail", "droppedLines"],
              properties: {
                exitCode: { type: ["integer", "null"] },
                signal: { type: ["string", "null"] },
                stderrTail: { type: "array", items: { type: "string" } },
                droppedLines: { type: "integer", minimum: 0 },
              },
            },
          ],
        },
      },
    },
    RunList: {
      title: "RunList",
      type: "object",
      additionalProperties: false,
      required: ["runs", "next"],
      properties: {
        runs: { type: "array", items: { $ref: "#/$defs/RunSummary" } },
        next: { description: "The `after` cursor of the next page; null on the last.", type: ["string", "null"] },
      },
    },
    CommittedEvent: {
      title: "CommittedEvent",
      type: "object",
      additionalProperties: false,
      required: ["seq", "event"],
      properties: {
        seq: { type: "integer", minimum: 1, description: "The event's sourceSeq: its place in the run's log." },
        event: {
          description: "The event envelope exactly as the authority committed it.",
          $ref: "#/$defs/PrpEvent",
        },
      },
    },
    PrpEvent: {
      title: "PrpEvent",
      description: "A PRP run event envelope (paperclip.prp.event.v1, v2 or v3): the contract's own schemas.",
      type: "object",
    },
    EventPage: {
      title: "EventPage",
      type: "object",
      additionalProperties: false,
      required: ["events", "next", "ended"],
      properties: {
        events: { type: "array", items: { $ref: "#/$defs/CommittedEvent" } },
        next: {
          type: "integer",
          minimum: 0,
          description:
            "Pass as `after` for the next page: the last seq sent, or with `type`/`q` the last seq scanned (a sparse filter pages on without matches).",
        },
        ended: { type: "boolean", description: "True once this page holds (or passed) the run's run.terminal." },
      },
    },
    CommandType: {
      title: "CommandType",
      enum: ["turn.start", "turn.steer", "request.resolve", "turn.interrupt", "run.cancel"],
    },
    CommandRequest: {
      title: "CommandRequest",
      description: "POST /v1/runs/{runId}/commands. Closed; the payload is checked by the contract's command codec.",
      type: "object",
      additionalProperties: false,
      required: ["type", "payload"],
      properties: { type: { $ref: "#/$defs/CommandType" }, payload: { type: "object" } },
    },
    CommandReceipt: {
      title: "CommandReceipt",
      type: "object",
      additionalProperties: false,
      required: ["commandId", "controllerSeq", "type", "status", "delivered"],
      properties: {
        commandId: ID,
        controllerSeq: { type: "integer", minimum: 1 },
        type: { type: "string" },
        status: {
          description: "The runner's result; null while it is pending.",
          enum: ["completed", "failed", "rejected", "indeterminate", null],
        },
        delivered: { type: "boolean", description: "Whether the authority has sent it to a runner." },
        created: { type: "boolean", description: "False when this request repeated one already queued." },
        requestId: { type: "string", description: "For request.resolve: the request it answers." },
        text: {
          type: "string",
          description: "For turn.start and turn.steer: the person's words, as queued (the first 65,536 characters).",
        },
        reason: {
          type: "string",
          description: "With a result that is not `completed`: the runner's code and message.",
        },
      },
    },
    Ticket: {
      title: "Ticket",
      description: "POST /v1/runs/{runId}/tickets: a one-use bootstrap ticket, shown once, and how to use it.",
      type: "object",
      additionalProperties: false,
      required: ["runId", "ticket", "expiresAt", "connectUrl", "runnerArgs", "environment"],
      properties: {
        runId: ID,
        ticket: { type: "string", description: "Give it to the runner in PAPERCLIP_RUNNER_BOOTSTRAP_TICKET." },
        expiresAt: TIME,
        connectUrl: { type: "string" },
        runnerArgs: { type: "array", items: { type: "string" }, description: "prp-runnerd's arguments." },
        environment: {
          type: "object",
          additionalProperties: { type: "string" },
          description: "The environment the runner needs beside its arguments.",
        },
      },
    },
    TicketRequest: {
      title: "TicketRequest",
      type: "object",
      additionalProperties: false,
      properties: {
        ttlMs: {
          type: "integer",
          minimum: 1000,
          maximum: 60000,
          description: "How long it is good for, in ms (default and most: 60000).",
        },
        stateDir: { type: "string", minLength: 1, maxLength: 4096, description: "The runner's state folder." },
      },
    },
    Dispatch: {
      title: "Dispatch",
      description:
        "Where a run created through the API is in the queue: queued (with why it waits), claimed by a worker (or by hand), or ended by its dispatch (cancelled while queued, its worker lost too often, its runner exited before its terminal).",
      type: "object",
      additionalProperties: false,
      required: [
        "state",
        "attempts",
        "workerId",
        "queuedAt",
        "claimedAt",
        "endedAt",
        "endReason",
        "endDetail",
        "waiting",
      ],
      properties: {
        state: { enum: ["queued", "claimed", "ended"] },
        attempts: { type: "integer", minimum: 0, description: "Claims so far, the current one included." },
        workerId: {
          description: "The claiming worker; null when queued, ended, or claimed by hand.",
          type: ["string", "null"],
        },
        queuedAt: TIME,
        claimedAt: { oneOf: [TIME, { type: "null" }] },
        endedAt: { oneOf: [TIME, { type: "null" }] },
        endReason: {
          description:
            "cancelled, worker_lost or runner_exited; null while not ended, or when the run's own terminal ended it.",
          type: ["string", "null"],
        },
        endDetail: { type: ["string", "null"] },
        waiting: {
          description:
            'Why a queued run waits, for a person ("cap agent=claude 4/4", "no worker with os=linux"); null unless queued.',
          type: ["string", "null"],
        },
      },
    },
    WorkerPoll: {
      title: "WorkerPoll",
      description:
        "POST /v1/workers/poll, the worker's one call: its heartbeat, what it holds, the runners that exited, what it gives back, and how many runs it would start now. A retry of a failed poll repeats the same requestId and body.",
      type: "object",
      additionalProperties: false,
      required: ["requestId", "labels", "maxRuns", "draining", "held", "want", "exited", "released"],
      properties: {
        requestId: { type: "string", pattern: "^[A-Za-z0-9_-]{8,64}$", description: "The worker's id for this poll." },
        labels: LABELS,
        agents: AGENTS,
        maxRuns: { type: "integer", minimum: 1, maximum: 256 },
        draining: { type: "boolean", description: "It stops claiming: it only finishes what it runs." },
        held: {
          type: "array",
          maxItems: 256,
          uniqueItems: true,
          items: ID,
          description: "Runs whose runner it runs now.",
        },
        want: { type: "integer", minimum: 0, maximum: 256, description: "New runs it would start now." },
        exited: {
          type: "array",
          maxItems: 256,
          items: {
            type: "object",
            additionalProperties: false,
            required: ["runId", "exitCode", "signal"],
            properties: {
              runId: ID,
              exitCode: { type: ["integer", "null"] },
              signal: { type: ["string", "null"], maxLength: 32 },
            },
          },
        },
        released: {
          type: "array",
          maxItems: 256,
          uniqueItems: true,
          items: ID,
          description: "Claims given back unstarted.",
        },
        waitMs: {
          type: "integer",
          minimum: 0,
          maximum: 30000,
          description: "With want > 0 and nothing to claim: hold the answer up to this long for a run to be queued.",
        },
      },
    },
    WorkerClaim: {
      title: "WorkerClaim",
      description: "A run handed to a worker: its one-use ticket (shown once) and what prp-runnerd needs to serve it.",
      type: "object",
      additionalProperties: false,
      required: [
        "runId",
        "attempt",
        "ticket",
        "expiresAt",
        "connectUrl",
        "protocolMax",
        "identity",
        "harnessArgs",
        "spec",
      ],
      properties: {
        runId: ID,
        attempt: { type: "integer", minimum: 1 },
        ticket: {
          type: "string",
          description: "Hand it to prp-runnerd through a pipe (--ticket-stdin), never argv or the environment.",
        },
        expiresAt: TIME,
        connectUrl: { type: "string" },
        protocolMax: { type: "integer", minimum: 1, maximum: 3 },
        identity: { $ref: "#/$defs/Identity" },
        harnessArgs: {
          type: "array",
          items: { type: "string" },
          description: "prp-runnerd's harness flags for the run's agent.",
        },
        spec: { $ref: "#/$defs/RunSpec" },
        traceParent: {
          type: "string",
          maxLength: 55,
          description:
            "The W3C traceparent of the traced request that created the run: the runner's spans are its children (TRACEPARENT).",
        },
      },
    },
    WorkerPollAnswer: {
      title: "WorkerPollAnswer",
      type: "object",
      additionalProperties: false,
      required: ["workerId", "heartbeatMs", "graceMs", "claims", "lost"],
      properties: {
        workerId: ID,
        heartbeatMs: { type: "integer", minimum: 1, description: "Poll again within this long." },
        graceMs: { type: "integer", minimum: 1, description: "Silent longer than this, a worker loses its claims." },
        claims: { type: "array", items: { $ref: "#/$defs/WorkerClaim" } },
        lost: {
          type: "array",
          items: ID,
          description:
            "Runs it holds that are no longer its own (taken back while it was silent, cancelled): stop their runners.",
        },
      },
    },
    Worker: {
      title: "Worker",
      type: "object",
      additionalProperties: false,
      required: [
        "workerId",
        "name",
        "labels",
        "agents",
        "maxRuns",
        "activeRuns",
        "draining",
        "lastSeenAt",
        "health",
        "revoked",
      ],
      properties: {
        workerId: ID,
        name: { type: "string" },
        labels: LABELS,
        agents: AGENTS,
        maxRuns: { type: "integer", minimum: 0 },
        activeRuns: { type: "integer", minimum: 0 },
        draining: { type: "boolean" },
        lastSeenAt: { oneOf: [TIME, { type: "null" }] },
        health: { enum: ["never_seen", "live", "silent", "revoked"] },
        revoked: { type: "boolean" },
      },
    },
    AgentList: {
      title: "AgentList",
      description:
        "GET /v1/agents: what a RunSpec's agent may name here: the authority's agent catalog (built in and PRP_AGENT_CATALOG) and the fake harness's scripts.",
      type: "object",
      additionalProperties: false,
      required: ["profiles", "scripts"],
      properties: {
        profiles: {
          description: "The named agents, for `{kind: profile, profile: NAME}`.",
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["name", "title"],
            properties: { name: { type: "string" }, title: { type: "string" } },
          },
        },
        scripts: {
          description: "The fake harness's scripts, for `{kind: fake, script: NAME}`, sorted.",
          type: "array",
          items: { type: "string" },
        },
      },
    },
    WorkerList: {
      title: "WorkerList",
      type: "object",
      additionalProperties: false,
      required: ["workers", "caps"],
      properties: {
        workers: { type: "array", items: { $ref: "#/$defs/Worker" } },
        caps: {
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["scope", "max", "active"],
            properties: { scope: { type: "string" }, max: { type: "integer" }, active: { type: "integer" } },
          },
        },
      },
    },
  },
} as const;

export type ApiSchemaName = keyof (typeof API_SCHEMAS)["$defs"];
