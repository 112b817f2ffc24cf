import { cpSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import type { Change, Direction } from "../contract/compat/changes.js";
import { diffContracts, verdict } from "../contract/compat/classify.js";
import { openContractTree, type ContractTree } from "../contract/compat/contract-tree.js";
import { computeContractDigest, type ContractDigest } from "../contract/fingerprint/contract-digest.js";
import { REGISTERED_SOURCES } from "../contract/fingerprint/registry.js";
import { packageRoot } from "../contract/package-root.js";

const DIRECTIONS: readonly Direction[] = ["producer", "consumer", "both"];

function openTree(spec: string | undefined, repo: string, cmd: Command): ContractTree {
  if (spec === undefined) return { root: packageRoot(), label: "this package", dispose: () => {} };
  const tree = openContractTree(spec, repo);
  if (!tree.ok) cmd.error(`${tree.error.code}: ${tree.error.message}`, { exitCode: 2 });
  return tree.value;
}

/** Runs `use` with the tree's digest, or reports the missing source (exit 1); disposes of the tree either way. */
function withDigest(tree: ContractTree, use: (tree: ContractTree, digest: ContractDigest) => void): void {
  try {
    const result = computeContractDigest(tree.root);
    if (result.ok) return use(tree, result.value);
    console.error(`${result.error.code} at ${result.error.path}: ${result.error.message}`);
    process.exitCode = 1;
  } finally {
    tree.dispose();
  }
}

const effect = (c: Change) =>
  `producers ${c.producer === "breaking" ? "BREAK" : "ok"}, consumers ${c.consumer === "breaking" ? "BREAK" : "ok"}`;

function registerDigest(contract: Command): void {
  contract
    .command("digest")
    .description("print the contract digest: equal digests mean the same wire contract")
    .argument("[tree]", "a PRP Kit folder or a git revision (default: this package)")
    .option("--json", "print the digest and every registered source's as one JSON object")
    .option("--repo <dir>", "the git repository a revision is read from", ".")
    .addHelpText(
      "after",
      `
The digest covers the registered sources (src/contract/fingerprint/registry.ts): the JSON
schemas with annotations (description, title, $comment, examples) removed, the generated types
with comments, formatting and type names removed, and the hand-written key lists and limits,
including the reserved environment keys. A registered source that is missing is an error.

Exit status: 0 with the digest, 1 when a registered source is missing, 2 on bad usage.

Examples:
  prp contract digest
  prp contract digest --json v0.1.0`,
    )
    .action((spec: string | undefined, opts: { json?: boolean; repo: string }, cmd: Command) => {
      withDigest(openTree(spec, opts.repo, cmd), (tree, digest) => {
        if (opts.json) console.log(JSON.stringify({ tree: tree.label, ...digest }));
        else {
          console.log(digest.contractDigest);
          for (const s of digest.sources)
            console.log(`  ${s.digest}  ${s.source}${s.files ? ` (${s.files.length} schemas)` : ""}`);
        }
      });
    });
}

function registerDiff(contract: Command): void {
  contract
    .command("diff")
    .description("classify every change between two contracts by its effect on producers and consumers")
    .argument("<old>", "the old contract: a PRP Kit folder or a git revision")
    .argument("[new]", "the new contract (default: this package)")
    .option("--direction <d>", "which compatibility the exit status reports: producer, consumer or both", "both")
    .option(
      "--json",
      "print {old, new, direction, compatible, changes: [{schema, pointer, kind, detail, producer, consumer}]}",
    )
    .option("--repo <dir>", "the git repository revisions are read from", ".")
    .addHelpText(
      "after",
      `
producer: can documents an OLD producer writes still be accepted by a NEW consumer?
consumer: can an OLD consumer still accept the documents a NEW producer writes?
A new optional member of an open object is compatible both ways; of a closed object, it breaks
old consumers. A new enum value or event type breaks old consumers; a tightened limit, a new
required member or a removed enum value breaks old producers; a changed const breaks both.
Hand-written key lists and limits have no schema to reason about: a change there counts as
breaking both ways. Annotations are never compared.

Exit status: 0 when compatible in the direction asked, 1 when not, 2 on bad usage.

Examples:
  prp contract diff HEAD~20
  prp contract diff --direction consumer --json v0.1.0 main`,
    )
    .action(
      (
        oldSpec: string,
        newSpec: string | undefined,
        opts: { json?: boolean; repo: string; direction: string },
        cmd: Command,
      ) => {
        if (!DIRECTIONS.includes(opts.direction as Direction))
          cmd.error(`--direction must be producer, consumer or both, not ${JSON.stringify(opts.direction)}`, {
            exitCode: 2,
          });
        const direction = opts.direction as Direction;
        const oldTree = openTree(oldSpec, opts.repo, cmd);
        const newTree = openTree(newSpec, opts.repo, cmd);
        try {
          const changes = diffContracts(oldTree.root, newTree.root);
          const v = verdict(changes, direction);
          if (opts.json)
            console.log(
              JSON.stringify({ old: oldTree.label, new: newTree.label, direction, compatible: v.compatible, changes }),
            );
          else {
            console.log(
              `${oldTree.label} → ${newTree.label}: ${changes.length} change${changes.length === 1 ? "" : "s"}`,
            );
            for (const c of changes)
              console.log(`  ${c.kind}  ${c.schema}${c.pointer ? `#${c.pointer}` : ""}  ${c.detail}  (${effect(c)})`);
            const what = direction === "both" ? "producers and consumers" : `${direction}s`;
            console.log(
              v.compatible
                ? `compatible for ${what}`
                : `NOT compatible for ${what}: ${v.breaking.length} breaking change${v.breaking.length === 1 ? "" : "s"}`,
            );
          }
          process.exitCode = v.compatible ? 0 : 1;
        } finally {
          oldTree.dispose();
          newTree.dispose();
        }
      },
    );
}

function registerExport(contract: Command): void {
  contract
    .command("export")
    .description(
      "copy a contract's registered sources into an archive folder named by its digest, for --runner-contract compatible",
    )
    .argument("[tree]", "a PRP Kit folder or a git revision (default: this package)")
    .requiredOption("--out <dir>", "the archive: the contract goes to <dir>/<digest hex>/")
    .option("--repo <dir>", "the git repository a revision is read from", ".")
    .addHelpText(
      "after",
      `
An authority started with --runner-contract compatible --contract-archive DIR accepts a runner
built for another contract when that contract is in DIR and \`prp contract diff\` finds no
change that breaks the documents either side sends.

Example:
  prp contract export v0.1.0 --out /var/lib/prp/contracts`,
    )
    .action((spec: string | undefined, opts: { out: string; repo: string }, cmd: Command) => {
      withDigest(openTree(spec, opts.repo, cmd), (tree, digest) => {
        const target = join(opts.out, digest.contractDigest.replace(/^sha256:/, ""));
        for (const source of REGISTERED_SOURCES) {
          mkdirSync(dirname(join(target, source.path)), { recursive: true });
          cpSync(join(tree.root, source.path), join(target, source.path), { recursive: true });
        }
        console.log(`${digest.contractDigest} → ${target}`);
      });
    });
}

export function registerContract(program: Command): void {
  const contract = program
    .command("contract")
    .description("the contract digest, a directional breaking-change classifier, and an archive of known contracts");
  registerDigest(contract);
  registerDiff(contract);
  registerExport(contract);
}
