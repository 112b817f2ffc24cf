import type {
  ApiTokensPart,
  AuthorityStore,
  CommandsPart,
  ConnectionsPart,
  CredentialsPart,
  DiagnosticsPart,
  DispatchPart,
  EventsPart,
  NoticesPart,
  RunSpecsPart,
  RunsPart,
} from "./store.js";

/** A store's parts, one per aggregate, each built by its database over one shared connection. */
export interface StoreParts {
  runs: RunsPart;
  credentials: CredentialsPart;
  events: EventsPart;
  commands: CommandsPart;
  diagnostics: DiagnosticsPart;
  connections: ConnectionsPart;
  notices: NoticesPart;
  tokens: ApiTokensPart;
  specs: RunSpecsPart;
  dispatch: DispatchPart;
}

type P<K extends keyof AuthorityStore> = Parameters<AuthorityStore[K]>;

/**
 * The AuthorityStore methods that a part answers, routed once for both databases: each store
 * builds its parts and passes them here, and keeps only what is its own (opening, closing,
 * where it lives). A new aggregate is a new part, a new slice in store.ts and its routes here.
 */
export abstract class PartsStore implements Omit<AuthorityStore, "close"> {
  constructor(private readonly parts: StoreParts) {}

  registerRun(...a: P<"registerRun">) {
    return this.parts.runs.registerRun(...a);
  }
  run(...a: P<"run">) {
    return this.parts.runs.run(...a);
  }
  runCursor(...a: P<"runCursor">) {
    return this.parts.runs.runCursor(...a);
  }
  runIds(...a: P<"runIds">) {
    return this.parts.runs.runIds(...a);
  }
  liveRunWork(...a: P<"liveRunWork">) {
    return this.parts.runs.liveRunWork(...a);
  }

  insertTicket(...a: P<"insertTicket">) {
    return this.parts.credentials.insertTicket(...a);
  }
  credential(...a: P<"credential">) {
    return this.parts.credentials.credential(...a);
  }
  reauthorize(...a: P<"reauthorize">) {
    return this.parts.credentials.reauthorize(...a);
  }
  revoke(...a: P<"revoke">) {
    return this.parts.credentials.revoke(...a);
  }
  renewLeases(...a: P<"renewLeases">) {
    return this.parts.credentials.renewLeases(...a);
  }
  prune(...a: P<"prune">) {
    return this.parts.credentials.prune(...a);
  }

  committedEvent(...a: P<"committedEvent">) {
    return this.parts.events.committedEvent(...a);
  }
  committedWindow(...a: P<"committedWindow">) {
    return this.parts.events.committedWindow(...a);
  }
  countRedelivery(...a: P<"countRedelivery">) {
    return this.parts.events.countRedelivery(...a);
  }
  commitEvent(...a: P<"commitEvent">) {
    return this.parts.events.commitEvent(...a);
  }
  commitEvents(...a: P<"commitEvents">) {
    return this.parts.events.commitEvents(...a);
  }
  eventLog(...a: P<"eventLog">) {
    return this.parts.events.eventLog(...a);
  }

  command(...a: P<"command">) {
    return this.parts.commands.command(...a);
  }
  commands(...a: P<"commands">) {
    return this.parts.commands.commands(...a);
  }
  pendingCommandTimes(...a: P<"pendingCommandTimes">) {
    return this.parts.commands.pendingCommandTimes(...a);
  }
  appendCommand(...a: P<"appendCommand">) {
    return this.parts.commands.appendCommand(...a);
  }
  deliverNextCommand(...a: P<"deliverNextCommand">) {
    return this.parts.commands.deliverNextCommand(...a);
  }
  recordCommandResult(...a: P<"recordCommandResult">) {
    return this.parts.commands.recordCommandResult(...a);
  }

  recordMalformedFrame(...a: P<"recordMalformedFrame">) {
    return this.parts.diagnostics.recordMalformedFrame(...a);
  }
  recordDiagnostic(...a: P<"recordDiagnostic">) {
    return this.parts.diagnostics.recordDiagnostic(...a);
  }
  recordAuthFailure(...a: P<"recordAuthFailure">) {
    return this.parts.diagnostics.recordAuthFailure(...a);
  }
  diagnostics(...a: P<"diagnostics">) {
    return this.parts.diagnostics.diagnostics(...a);
  }
  authFailures(...a: P<"authFailures">) {
    return this.parts.diagnostics.authFailures(...a);
  }

  runnerConnections(...a: P<"runnerConnections">) {
    return this.parts.connections.runnerConnections(...a);
  }
  subscribe(...a: P<"subscribe">) {
    return this.parts.notices.subscribe(...a);
  }
  externalChangeMark() {
    return this.parts.notices.externalChangeMark();
  }

  insertApiToken(...a: P<"insertApiToken">) {
    return this.parts.tokens.insertApiToken(...a);
  }
  apiToken(...a: P<"apiToken">) {
    return this.parts.tokens.apiToken(...a);
  }
  apiTokens(...a: P<"apiTokens">) {
    return this.parts.tokens.apiTokens(...a);
  }
  revokeApiToken(...a: P<"revokeApiToken">) {
    return this.parts.tokens.revokeApiToken(...a);
  }

  createRun(...a: P<"createRun">) {
    return this.parts.specs.createRun(...a);
  }
  runSpec(...a: P<"runSpec">) {
    return this.parts.specs.runSpec(...a);
  }
  listRuns(...a: P<"listRuns">) {
    return this.parts.specs.listRuns(...a);
  }

  insertWorker(...a: P<"insertWorker">) {
    return this.parts.dispatch.insertWorker(...a);
  }
  worker(...a: P<"worker">) {
    return this.parts.dispatch.worker(...a);
  }
  workers(...a: P<"workers">) {
    return this.parts.dispatch.workers(...a);
  }
  revokeWorker(...a: P<"revokeWorker">) {
    return this.parts.dispatch.revokeWorker(...a);
  }
  pollWorker(...a: P<"pollWorker">) {
    return this.parts.dispatch.pollWorker(...a);
  }
  sweepWorkers(...a: P<"sweepWorkers">) {
    return this.parts.dispatch.sweepWorkers(...a);
  }
  cancelQueued(...a: P<"cancelQueued">) {
    return this.parts.dispatch.cancelQueued(...a);
  }
  claimByHand(...a: P<"claimByHand">) {
    return this.parts.dispatch.claimByHand(...a);
  }
  dispatch(...a: P<"dispatch">) {
    return this.parts.dispatch.dispatch(...a);
  }
  queuedRuns(...a: P<"queuedRuns">) {
    return this.parts.dispatch.queuedRuns(...a);
  }
  setCap(...a: P<"setCap">) {
    return this.parts.dispatch.setCap(...a);
  }
  caps(...a: P<"caps">) {
    return this.parts.dispatch.caps(...a);
  }
}
