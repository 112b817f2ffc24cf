import type * as T from "./generated/types.js";
import type { ValidatorName } from "./validator-names.js";

/** Every document kind the codec decodes. */
export interface KindValues {
  event: T.PRPV1RunEventEnvelope | T.PRPV2RunEventEnvelope | T.PRPV3RunEventEnvelope;
  command: T.PRPV1CommandEnvelope | T.PRPV2CommandEnvelope | T.PRPV3CommandEnvelope;
  fixture: T.PRPReplayFixture;
  result: T.PRPStructuredRunResult;
  terminal: T.PRPRunTerminal;
  "stop-reason": T.PRPStopReason;
  capabilities: T.PRPV1NegotiatedCapabilities | T.PRPV2NegotiatedCapabilities;
  identity: T.PRPRunIdentity;
  request: T.PRPRequest;
  "question-set": T.PRPQuestionSet;
  "question-response": T.PRPQuestionResponse;
  "semantic-tool": T.PRPSemanticToolReceipt;
  usage: T.PRPUsageReceipt;
  "provider-descriptor": T.PRPProviderDescriptor;
  "provider-event": T.PRPProviderNeutralActivityPayload;
  "output-body-reference": T.ImmutableOutputBodyReference;
  "output-body-chunk": T.OutputBodyChunk;
  "workspace-diff": T.PRPWorkspaceDiff;
  "workspace-file-reference": T.PRPWorkspaceFileReference;
  "session-goal-capability": T.SessionGoalCapability;
  "session-goal-snapshot": T.SessionGoalSnapshot;
  "auth-credentials-updated": T.PRPHarnessCredentialsUpdated;
  "runtime-activity": T.PRPRuntimeActivity;
  "native-execution": T.PaperclipRunnerNativeExecutionBundle;
  "conformance-fixture": T.PRPCrossLanguageConformanceInput;
  "conformance-output": T.PRPCrossLanguageConformanceOutput;
  "question-adapter-fixture": T.PRPQuestionAdapterFixture;
  "acpx-sidecar-message": T.ACPXSidecarMessage;
  "fake-harness-script": T.PRPFakeHarnessScript;
  "fake-harness-message": T.PRPFakeHarnessMessage;
  "fake-harness-command": T.PRPFakeHarnessCommand;
  "runner-stream-record": T.RunnerStreamEventRecord | T.RunnerStreamReceiptRecord;
  "runner-handshake": T.PRPRunnerHandshakeEnvelope;
  "runner-control-envelope": T.PRPRunnerControlEnvelope;
}
export type Kind = keyof KindValues;
export type PrpEvent = KindValues["event"];
export type PrpCommand = KindValues["command"];

/** How a discriminator value selects a kind, its validator and (for envelopes) its version. */
export interface KindBinding {
  kind: Kind;
  validator: ValidatorName;
  version?: number;
}

/** Kinds that carry no discriminator and are decoded only when the caller names them. */
const UNDISCRIMINATED: Partial<Record<Kind, ValidatorName>> = {
  usage: "usage",
  "provider-descriptor": "provider_descriptor",
  "session-goal-capability": "session_goal_capability",
  "session-goal-snapshot": "session_goal_snapshot",
  "runtime-activity": "runtime_activity",
  "acpx-sidecar-message": "acpx_sidecar_message",
  // The durable transport's envelopes are told apart by protocol, version and kind, not `schema`.
  "runner-handshake": "runner_handshake",
  "runner-control-envelope": "runner_control_envelope",
};

const PROVIDER_EVENT_CONSTS = [
  "paperclip.plan.updated.v1",
  "paperclip.tool.execution.v1",
  "paperclip.research.v1",
  "paperclip.delegation.v1",
  "paperclip.model.route_changed.v1",
  "paperclip.model.verification.v1",
  "paperclip.context.compacted.v1",
  "paperclip.artifact.viewed.v1",
  "paperclip.artifact.generated.v1",
  "paperclip.review.mode_changed.v1",
  "paperclip.hook.v1",
  "paperclip.memory.citation.v1",
  "paperclip.safety.review.v1",
  "paperclip.terminal.input_sent.v1",
  "paperclip.wait.v1",
  "paperclip.provider.notice.v1",
];

/** The `schema` discriminator registry (wire.md §4, §14.5), for the kinds the codec decodes. */
export const SCHEMA_DISCRIMINATORS: ReadonlyMap<string, KindBinding> = new Map<string, KindBinding>([
  ["paperclip.prp.event.v1", { kind: "event", validator: "event_v1", version: 1 }],
  ["paperclip.prp.event.v2", { kind: "event", validator: "event_v2", version: 2 }],
  ["paperclip.prp.event.v3", { kind: "event", validator: "event_v3", version: 3 }],
  ["paperclip.prp.command.v1", { kind: "command", validator: "command_v1", version: 1 }],
  ["paperclip.prp.command.v2", { kind: "command", validator: "command_v2", version: 2 }],
  ["paperclip.prp.command.v3", { kind: "command", validator: "command_v3", version: 3 }],
  ["paperclip.prp.capabilities.v1", { kind: "capabilities", validator: "capabilities_v1", version: 1 }],
  ["paperclip.prp.capabilities.v2", { kind: "capabilities", validator: "capabilities_v2", version: 2 }],
  ["paperclip.prp.fixture.v1", { kind: "fixture", validator: "fixture" }],
  ["paperclip.run_result.v1", { kind: "result", validator: "result" }],
  ["paperclip.prp.terminal.v1", { kind: "terminal", validator: "terminal" }],
  ["paperclip.prp.stop_reason.v1", { kind: "stop-reason", validator: "stop_reason" }],
  ["paperclip.prp.identity.v1", { kind: "identity", validator: "identity" }],
  ["paperclip.runtime_request.v1", { kind: "request", validator: "request" }],
  ["paperclip.runtime_request.v2", { kind: "request", validator: "request" }],
  ["paperclip.interaction_request.v1", { kind: "request", validator: "request" }],
  ["paperclip.question_set.v1", { kind: "question-set", validator: "question_set" }],
  ["paperclip.question_response.v1", { kind: "question-response", validator: "question_response" }],
  ["paperclip.prp.semantic_tool.v1", { kind: "semantic-tool", validator: "semantic_tool" }],
  ["paperclip.output.body.v1", { kind: "output-body-reference", validator: "output_body_reference" }],
  ["paperclip.output.body.chunk.v1", { kind: "output-body-chunk", validator: "output_body_chunk" }],
  ["paperclip.workspace.diff.v1", { kind: "workspace-diff", validator: "workspace_diff" }],
  [
    "paperclip.workspace.file_reference.v1",
    { kind: "workspace-file-reference", validator: "workspace_file_reference" },
  ],
  [
    "paperclip.auth.credentials.updated.v1",
    { kind: "auth-credentials-updated", validator: "auth_credentials_updated" },
  ],
  ["paperclip-runner/native-execution/v1", { kind: "native-execution", validator: "native_execution" }],
  [
    "paperclip.prp.question_adapter_fixture.v1",
    { kind: "question-adapter-fixture", validator: "question_adapter_fixture" },
  ],
  ["paperclip.fake_harness.script.v1", { kind: "fake-harness-script", validator: "fake_harness_script" }],
  ["paperclip.fake_harness.message.v1", { kind: "fake-harness-message", validator: "fake_harness_message" }],
  ["paperclip.fake_harness.command.v1", { kind: "fake-harness-command", validator: "fake_harness_command" }],
  ["paperclip.runner.stream.v1", { kind: "runner-stream-record", validator: "runner_stream_record" }],
  ...PROVIDER_EVENT_CONSTS.map((c): [string, KindBinding] => [
    c,
    { kind: "provider-event", validator: "provider_event" },
  ]),
]);

/** The pre-PRP conformance pair is discriminated by `schemaVersion` instead (wire.md §15.5). */
export const SCHEMA_VERSION_DISCRIMINATORS: ReadonlyMap<string, KindBinding> = new Map<string, KindBinding>([
  ["paperclip.runner.phase0.fixture.v1", { kind: "conformance-fixture", validator: "conformance_fixture" }],
  ["paperclip.runner.phase0.output.v1", { kind: "conformance-output", validator: "conformance_output" }],
]);

export const ALL_KINDS: readonly Kind[] = [
  ...new Set<Kind>([...SCHEMA_DISCRIMINATORS.values(), ...SCHEMA_VERSION_DISCRIMINATORS.values()].map((b) => b.kind)),
  ...(Object.keys(UNDISCRIMINATED) as Kind[]),
];

export const isKind = (value: string): value is Kind => (ALL_KINDS as readonly string[]).includes(value);

/** The validator of a kind that has no discriminator, or undefined when the kind is discriminated. */
export const undiscriminatedValidator = (kind: Kind): ValidatorName | undefined => UNDISCRIMINATED[kind];
