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
      },
    },
    RunState: {
      title: "RunState",
      description:
        "queued: waiting for a worker; claimed: a worker (or a person) holds it, no event yet; pending: no event committed yet (a run outside the queue); running: events, no terminal; ended: run.terminal committed, or its dispatch ended (cancelled, lost, exited).",
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
      },
    },
    Run: {
      title: "Run",
      description:
        "GET /v1/runs/{runId}: the run's state, its reduced session, its result and terminal (null until they exist), the forms of its pending requests and why it failed. With `?upto=N`, the session, requests and failure are those of its first N events.",
      type: "object",
      additionalProperties: false,
      required: ["run", "identity", "position", "session", "result", "terminal", "requests", "failure", "commands"],
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
        commands: { type: "array", items: { $ref: "#/$defs/CommandReceipt" } },
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
        next: { type: "integer", minimum: 0, description: "Pass as `after` for the next page: the last seq sent." },
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
  },
} as const;

export type ApiSchemaName = keyof (typeof API_SCHEMAS)["$defs"];
