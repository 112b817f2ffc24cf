import type { Command } from "commander";
import type { AgentError } from "../agents/agent-error.js";
import { AGENTS_DIR_ENV, INSTALLED_MARKER, agentsDir } from "../agents/agents-dir.js";
import { CATALOG_ENV, findProfile, isPackageLaunch, loadCatalog, type AgentProfile } from "../agents/catalog.js";
import { installAgent, type Installed } from "../agents/install.js";
import { listAgents, type AgentListing } from "../agents/list.js";
import { printableJson, visible, visibleLines } from "./terminal-text.js";

interface CatalogOptions {
  agentsDir?: string;
  catalog?: string;
  json?: boolean;
}

interface InstallOptions extends CatalogOptions {
  all?: boolean;
  offline?: boolean;
  warnOnly?: boolean;
}

const FOLDER_HELP = `
The agents folder: --agents-dir, else $${AGENTS_DIR_ENV}, else $XDG_CACHE_HOME/prp-kit/agents
(~/.cache/prp-kit/agents without XDG_CACHE_HOME). The catalog: the built-in one, then
--catalog FILE or $${CATALOG_ENV}, whose profiles replace built-in ones of the same name.`;

const printJson = (value: unknown): void => {
  process.stdout.write(`${printableJson(JSON.stringify(value, null, 2))}\n`);
};

/** The catalog, or exit 1 saying why it cannot be read. */
function catalogOrExit(command: Command, path: string | undefined): AgentProfile[] {
  const catalog = loadCatalog(path ?? process.env[CATALOG_ENV]);
  if (!catalog.ok) command.error(`prp agents: ${visible(catalog.error.message)}`, { exitCode: 1 });
  return catalog.value;
}

/** Columns padded to their widest cell; the last is not padded. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")).join("\n");
}

const nodeCell = (l: AgentListing): string =>
  l.node === null ? "-" : l.node.ok === null ? `? ${l.node.range}` : `${l.node.ok ? "ok" : "NO"} ${l.node.range}`;

function printListing(listing: AgentListing[], dir: string): void {
  // A user catalog's text is shown, not obeyed: no cell may carry a control character.
  const rows = listing.map((l) =>
    [
      l.name,
      l.package ?? `command: ${l.command}`,
      l.installed === null ? "-" : l.installed ? "yes" : "no",
      nodeCell(l),
      l.title,
    ].map(visible),
  );
  const lines = [
    visible(`agents folder: ${dir} (Node ${process.version})`),
    "",
    table([["NAME", "PACKAGE", "INSTALLED", "NODE", "TITLE"], ...rows]),
    "",
    ...listing.map((l) => visible(`${l.name}: ${l.login}`)),
    ...listing.flatMap((l) => (l.node?.note ? [visible(`${l.name}: cannot check Node: ${l.node.note}`)] : [])),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** One agent's result, as the summary line and the JSON document show it. */
type AgentResult = { name: string; ok: true; result: Installed } | { name: string; ok: false; error: AgentError };

function summaryLine(r: AgentResult): string {
  if (r.ok) return `${r.name}: ${r.result.message}`;
  return `${r.name}: FAILED (${r.error.code}) ${r.error.message}`;
}

async function install(names: string[], opts: InstallOptions, command: Command): Promise<void> {
  if (opts.all && names.length > 0)
    command.error("prp agents install: name agents or give --all, not both", { exitCode: 2 });
  if (!opts.all && names.length === 0)
    command.error("prp agents install: name the agents to install, or give --all (`prp agents list` names them)", {
      exitCode: 2,
    });
  const profiles = catalogOrExit(command, opts.catalog);
  const chosen: AgentProfile[] = [];
  for (const name of opts.all ? profiles.filter((p) => isPackageLaunch(p.launch)).map((p) => p.name) : names) {
    const found = findProfile(profiles, name);
    if (!found.ok) command.error(`prp agents install: ${visible(found.error.message)}`, { exitCode: 2 });
    if (!chosen.includes(found.value)) chosen.push(found.value);
  }
  const dir = agentsDir(opts.agentsDir);
  const results: AgentResult[] = [];
  for (const profile of chosen) {
    const r = await installAgent(profile, dir, {
      offline: opts.offline === true,
      progress: (line) => process.stderr.write(`${visible(line)}\n`),
    });
    results.push(
      r.ok ? { name: profile.name, ok: true, result: r.value } : { name: profile.name, ok: false, error: r.error },
    );
  }
  const failed = results.filter((r) => !r.ok);
  if (opts.json) printJson({ agentsDir: dir, ok: failed.length === 0, agents: results });
  else for (const r of results) process.stdout.write(`${visibleLines(summaryLine(r))}\n`);
  if (failed.length === 0) return;
  if (opts.warnOnly) {
    process.stderr.write(
      `\n*** WARNING: ${failed.map((r) => r.name).join(", ")} could not be installed in ${dir} (above).\n` +
        "*** Tests that start a real agent will fail until `npm run agents:install` succeeds.\n\n",
    );
    return;
  }
  process.exitCode = 1;
}

/** `prp agents list` and `prp agents install`. */
export function registerAgentsInstall(agents: Command): void {
  agents
    .command("list")
    .description("the agents of the catalog: package, whether installed, whether this Node runs it, how to log in")
    .option("--json", "print one JSON document")
    .option("--agents-dir <dir>", "the agents folder (see below)")
    .option("--catalog <file>", `a catalog of your own, on top of the built-in one (default $${CATALOG_ENV})`)
    .addHelpText("after", FOLDER_HELP)
    .action((opts: CatalogOptions, command: Command) => {
      const profiles = catalogOrExit(command, opts.catalog);
      const dir = agentsDir(opts.agentsDir);
      const listing = listAgents(profiles, dir);
      if (opts.json) printJson({ agentsDir: dir, node: process.version, agents: listing });
      else printListing(listing, dir);
    });

  agents
    .command("install")
    .description("install agents of the catalog, each at its pinned version, into the agents folder")
    .argument("[names...]", "the agents to install (`prp agents list` names them)")
    .option("--all", "install every agent of the catalog that is an npm package")
    .option("--offline", "take everything from npm's cache; never reach the registry")
    .option("--agents-dir <dir>", "the agents folder (see below)")
    .option("--catalog <file>", `a catalog of your own, on top of the built-in one (default $${CATALOG_ENV})`)
    .option("--json", "print one JSON document: each agent's result")
    .option("--warn-only", "a failed install prints a warning and exits 0 (npm's prepare uses it)")
    .addHelpText(
      "after",
      `${FOLDER_HELP}

Each agent goes into <folder>/<name>@<version>/ with its own package.json, package-lock.json and
node_modules, built by npm in a staging folder beside it and renamed into place once complete
(a marker, ${INSTALLED_MARKER}, says so). An agent already installed is not touched and npm is not
run: once installed, it needs no network. npm's registry, proxy and cache are its own settings
(.npmrc, npm_config_*). --offline installs from npm's cache only.

Scripts: npm installs with --ignore-scripts, so no package's install script runs (an install
script is arbitrary code, run with your rights); then only the packages a profile names in
launch.installScripts get theirs (npm rebuild), e.g. opencode, whose script puts its native
binary in place. A command profile (launch.command) has nothing to install.

Exit status: 0 every agent installed or already there, 1 an install failed, 2 an unknown name
or a wrong command line.`,
    )
    .action((names: string[], opts: InstallOptions, command: Command) => install(names, opts, command));
}
