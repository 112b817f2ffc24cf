/**
 * Every validator the generated module exports, by name, with the schema reference it checks.
 * The codec looks validators up by these names; the generator compiles exactly this list.
 */
const V1 = "https://paperclip.dev/schemas/prp/v1";
const V2 = "https://paperclip.dev/schemas/prp/v2";
const V3 = "https://paperclip.dev/schemas/prp/v3";

export const VALIDATOR_REFS = {
  event_v1: `${V1}/event.schema.json`,
  event_v2: `${V2}/event.schema.json`,
  event_v3: `${V3}/event.schema.json`,
  command_v1: `${V1}/command.schema.json`,
  command_v2: `${V2}/command.schema.json`,
  command_v3: `${V3}/command.schema.json`,
  capabilities_v1: `${V1}/capabilities.schema.json`,
  capabilities_v2: `${V2}/capabilities.schema.json`,
  session_goal_capability: `${V2}/session-goal.schema.json#/$defs/capability`,
  session_goal_snapshot: `${V2}/session-goal.schema.json#/$defs/snapshot`,
  terminal: `${V1}/terminal.schema.json`,
  stop_reason: `${V1}/stop-reason.schema.json`,
  result: `${V1}/result.schema.json`,
  request: `${V1}/request.schema.json`,
  question_set: `${V1}/question-set.schema.json`,
  question_response: `${V1}/question-response.schema.json`,
  usage: `${V1}/usage.schema.json`,
  provider_descriptor: `${V1}/provider-descriptor.schema.json`,
  provider_event: `${V1}/provider-event.schema.json`,
  output_body_reference: `${V1}/output-body-reference.schema.json`,
  output_body_chunk: `${V1}/output-body-reference.schema.json#/$defs/chunk`,
  identity: `${V1}/identity.schema.json`,
  fixture: `${V1}/fixture.schema.json`,
  semantic_tool: `${V1}/semantic-tool.schema.json`,
  workspace_diff: `${V1}/workspace-diff.schema.json`,
  workspace_file_reference: `${V1}/workspace-file-reference.schema.json`,
  auth_credentials_updated: `${V1}/auth-credentials-updated.schema.json`,
  runtime_activity: `${V1}/runtime-activity.schema.json`,
  native_execution: `${V1}/native-execution.schema.json`,
  conformance_fixture: `${V1}/conformance-fixture.schema.json`,
  conformance_output: `${V1}/conformance-output.schema.json`,
  question_adapter_fixture: `${V1}/question-adapter-fixture.schema.json`,
  fake_harness_script: `${V1}/fake-harness-script.schema.json`,
  fake_harness_message: `${V1}/fake-harness-message.schema.json`,
  fake_harness_command: `${V1}/fake-harness-command.schema.json`,
  runner_stream_record: `${V1}/runner-stream.schema.json`,
  runner_handshake: `${V1}/runner-handshake.schema.json`,
  runner_handshake_header: `${V1}/runner-handshake.schema.json#/$defs/header`,
  runner_auth_hello: `${V1}/runner-handshake.schema.json#/$defs/helloPayload`,
  runner_auth_challenge: `${V1}/runner-handshake.schema.json#/$defs/challengePayload`,
  runner_auth_response: `${V1}/runner-handshake.schema.json#/$defs/responsePayload`,
  runner_control_envelope: `${V1}/runner-control-envelope.schema.json`,
  runner_control_from_core: `${V1}/runner-control-envelope.schema.json#/$defs/fromCore`,
  runner_control_from_runner: `${V1}/runner-control-envelope.schema.json#/$defs/fromRunner`,
  runner_control_welcome: `${V1}/runner-control-envelope.schema.json#/$defs/welcome`,
  // The header and each kind's payload on their own: how a control envelope is checked when it
  // is valid (transport/envelope.ts), the three above naming the rule when it is not.
  runner_control_header: `${V1}/runner-control-envelope.schema.json#/$defs/header`,
  runner_welcome_payload: `${V1}/runner-handshake.schema.json#/$defs/welcomePayload`,
  runner_ack_payload: `${V1}/runner-control-envelope.schema.json#/$defs/ackPayload`,
  runner_command_payload: `${V1}/runner-control-envelope.schema.json#/$defs/commandPayload`,
  runner_revoke_payload: `${V1}/runner-control-envelope.schema.json#/$defs/revokePayload`,
  runner_ping_payload: `${V1}/runner-control-envelope.schema.json#/$defs/pingPayload`,
  runner_command_result_ack_payload: `${V1}/runner-control-envelope.schema.json#/$defs/commandResultAckPayload`,
  runner_lease_renewed_payload: `${V1}/runner-control-envelope.schema.json#/$defs/leaseRenewedPayload`,
  runner_event_payload: `${V1}/runner-control-envelope.schema.json#/$defs/eventPayload`,
  runner_command_result_payload: `${V1}/runner-control-envelope.schema.json#/$defs/commandResultPayload`,
  runner_pong_payload: `${V1}/runner-control-envelope.schema.json#/$defs/pongPayload`,
  runner_lease_renew_payload: `${V1}/runner-control-envelope.schema.json#/$defs/leaseRenewPayload`,
  acpx_sidecar_message: "https://paperclip.dev/schemas/acpx-sidecar/v2/message.schema.json",
} as const;

export type ValidatorName = keyof typeof VALIDATOR_REFS;
export const VALIDATOR_NAMES = Object.keys(VALIDATOR_REFS) as ValidatorName[];
