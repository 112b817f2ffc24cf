/**
 * `prp-kit/client`: the typed client of the authority's HTTP API v1 (docs/client.md).
 */
export { PrpClient, type IdempotencyOptions, type PrpClientOptions, type RunQuery } from "./client.js";
export { PrpApiError, CLIENT_ERROR_CODES } from "./errors.js";
export { type FollowOptions, type ReconnectInfo } from "./follow.js";
export type {
  Agent,
  AgentList,
  CommandReceipt,
  CommandRequest,
  CommandType,
  CommittedEvent,
  Error as ApiErrorBody,
  EventPage,
  Identity,
  PrpEvent,
  Run,
  RunList,
  RunSpec,
  RunState,
  RunSummary,
  Ticket,
  TicketRequest,
  Dispatch,
  Worker,
  WorkerClaim,
  WorkerList,
  WorkerPoll,
  WorkerPollAnswer,
} from "../contract/api/generated/types.js";
