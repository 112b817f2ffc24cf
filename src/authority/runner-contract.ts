import { existsSync } from "node:fs";
import { join } from "node:path";
import { breaksIn, type Change, type Direction } from "../contract/compat/changes.js";
import { diffContracts } from "../contract/compat/classify.js";
import { packageRoot } from "../contract/package-root.js";
import type { TransportError } from "../transport/errors.js";

export const RUNNER_CONTRACT_POLICIES = ["equal", "compatible", "any"] as const;
export type RunnerContractPolicy = (typeof RUNNER_CONTRACT_POLICIES)[number];

export interface RunnerContractOptions {
  policy: RunnerContractPolicy;
  /** The contract this authority speaks (`buildContractDigest()`). */
  digest: string;
  /**
   * For `compatible`: a folder of known contract trees, one per digest, named by its hex
   * (`prp contract export --out DIR`). A runner's contract must be found here to be judged.
   */
  archive?: string;
  /** This authority's own contract tree (default: this package). */
  root?: string;
}

/** What `--runner-contract` and `--contract-archive` say, before the digest is known. */
export interface RunnerContractFlags {
  runnerContract: RunnerContractPolicy;
  contractArchive?: string;
}

export const runnerContractFrom = (flags: RunnerContractFlags, digest: string): RunnerContractOptions => ({
  policy: flags.runnerContract,
  digest,
  ...(flags.contractArchive !== undefined ? { archive: flags.contractArchive } : {}),
});

const hexOf = (digest: string) => digest.replace(/^sha256:/, "");

const refuse = (message: string): TransportError => ({
  code: "contract_mismatch",
  path: "/payload/contractDigest",
  message,
});

/**
 * Which way a schema's documents travel decides which compatibility matters: the runner writes
 * events and reads commands; everything else (payloads shared by both, the handshake) must be
 * compatible both ways. The diff runs from the runner's contract (old) to this one's (new).
 */
function directionFor(schemaId: string): Direction {
  const file = schemaId.slice(schemaId.lastIndexOf("/") + 1);
  if (/^command(-v\d+)?\.schema\.json$/.test(file)) return "consumer";
  if (/^event(-v\d+)?\.schema\.json$/.test(file)) return "producer";
  return "both";
}

export const breakingBetween = (changes: readonly Change[]): Change[] =>
  changes.filter((c) => breaksIn(c, directionFor(c.schema)));

/**
 * The handshake check for a runner's contract digest (runtime.md §12.2, issue "runner
 * compatibility at the handshake"): `equal` requires the same digest; `compatible` also accepts
 * a runner whose archived contract differs only in ways neither side's documents notice; `any`
 * accepts every runner. A runner that reports no digest is refused by `equal` and `compatible`.
 */
export function runnerContractCheck(
  options: RunnerContractOptions,
): (contractDigest: string | undefined) => TransportError | null {
  const verdicts = new Map<string, TransportError | null>();
  const upgrade = (runner: string) =>
    `runner built for contract ${runner}, this control plane speaks ${options.digest}: upgrade the runner image`;
  return (contractDigest) => {
    if (options.policy === "any" || contractDigest === options.digest) return null;
    if (contractDigest === undefined)
      return refuse(
        `the runner reports no contract digest, and this control plane (contract ${options.digest}) requires one: upgrade the runner image`,
      );
    if (options.policy === "equal") return refuse(upgrade(contractDigest));
    if (!verdicts.has(contractDigest)) verdicts.set(contractDigest, judge(options, contractDigest, upgrade));
    return verdicts.get(contractDigest)!;
  };
}

function judge(
  options: RunnerContractOptions,
  contractDigest: string,
  upgrade: (d: string) => string,
): TransportError | null {
  const tree = options.archive === undefined ? undefined : join(options.archive, hexOf(contractDigest));
  if (tree === undefined || !existsSync(join(tree, "protocol"))) {
    return refuse(
      `${upgrade(contractDigest)} (contract ${contractDigest} is not in ${options.archive === undefined ? "a contract archive: start the authority with --contract-archive" : `the contract archive ${options.archive}`}, so its compatibility cannot be judged)`,
    );
  }
  const breaking = breakingBetween(diffContracts(tree, options.root ?? packageRoot()));
  if (breaking.length === 0) return null;
  const first = breaking[0]!;
  return refuse(
    `${upgrade(contractDigest)} (${breaking.length} breaking change${breaking.length === 1 ? "" : "s"}, first: ${first.kind} at ${first.schema}${first.pointer ? `#${first.pointer}` : ""}: ${first.detail})`,
  );
}
