import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ok } from "../contract/result.js";
import { agentError, type AgentOutcome } from "./agent-error.js";
import { INSTALLED_MARKER, installDir, installedBin, isInstalled } from "./agents-dir.js";
import { isPackageLaunch, type AgentProfile, type PackageLaunch } from "./catalog.js";
import { npmFailureCause, runNpm } from "./npm.js";

export interface InstallOptions {
  /** npm may not reach the registry: everything must come from its cache. */
  offline?: boolean;
  /** npm's environment (its registry and cache come from npm_config_* and .npmrc as usual). */
  env?: NodeJS.ProcessEnv;
  /** One line per step, for a person watching. */
  progress?: (line: string) => void;
}

export type InstallStatus = "installed" | "already_installed" | "nothing_to_install";

export interface Installed {
  name: string;
  status: InstallStatus;
  /** The install's folder; absent for a command profile. */
  path?: string;
  message: string;
}

/** What a complete install records, beside its bin: what was installed, when, with which Node and npm. */
export interface InstalledRecord {
  package: string;
  version: string;
  bin: string;
  installedAt: string;
  node: string;
  npm: string;
}

const stagingPrefix = (name: string, launch: PackageLaunch): string => `.staging-${name}@${launch.version}-`;

/** Is the process that made a staging folder still running? (`kill 0` only asks.) */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Staging folders of this profile left by an install that died (its pid, in the name, is gone).
 * Those of an install still running, here or in another process, are left alone.
 */
function removeLeftovers(dir: string, prefix: string): void {
  for (const entry of readdirSync(dir)) {
    if (!entry.startsWith(prefix)) continue;
    const pid = Number(entry.slice(prefix.length).split("-")[0]);
    if (!Number.isInteger(pid) || !alive(pid)) rmSync(join(dir, entry), { recursive: true, force: true });
  }
}

/**
 * Puts the complete staging folder in place by one rename, so that no crash ever leaves a folder
 * that looks installed. When another install of the same profile got there first, its folder is
 * kept if complete; a folder that is not (never made by this code) is replaced.
 */
function publish(staging: string, home: string, dir: string, name: string, launch: PackageLaunch): "mine" | "theirs" {
  for (let attempt = 0; ; attempt++) {
    try {
      renameSync(staging, home);
      return "mine";
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if ((code !== "ENOTEMPTY" && code !== "EEXIST") || attempt > 0) throw e;
      if (isInstalled(dir, name, launch)) {
        rmSync(staging, { recursive: true, force: true });
        return "theirs";
      }
      rmSync(home, { recursive: true, force: true });
    }
  }
}

/**
 * Installs a package profile into `installDir(dir, …)`: its own package.json, package-lock.json
 * and node_modules, built in a staging folder beside it and renamed into place once complete.
 * A complete install is left as it is, without reaching npm. A command profile has nothing to
 * install.
 */
export async function installAgent(
  profile: AgentProfile,
  dir: string,
  options: InstallOptions = {},
): Promise<AgentOutcome<Installed>> {
  const { name, launch } = profile;
  const progress = options.progress ?? (() => {});
  if (!isPackageLaunch(launch))
    return ok({
      name,
      status: "nothing_to_install",
      message: `nothing to install: ${name} runs the command \`${launch.command}\` already on this machine`,
    });
  const spec = `${launch.package}@${launch.version}`;
  const home = installDir(dir, name, launch);
  if (isInstalled(dir, name, launch))
    return ok({ name, status: "already_installed", path: home, message: `already installed in ${home}` });

  progress(`installing ${name} (${spec})…`);
  mkdirSync(dir, { recursive: true });
  const prefix = stagingPrefix(name, launch);
  removeLeftovers(dir, prefix);
  const staging = join(dir, `${prefix}${process.pid}-${randomBytes(4).toString("hex")}`);
  mkdirSync(staging);
  try {
    const built = await build(profile, launch, staging, options, progress);
    if (!built.ok) return built;
    writeFileSync(join(staging, INSTALLED_MARKER), `${JSON.stringify(built.value, null, 2)}\n`);
    progress(`  putting it in place: ${home}`);
    if (publish(staging, home, dir, name, launch) === "theirs")
      return ok({
        name,
        status: "already_installed",
        path: home,
        message: `already installed in ${home} (by another install)`,
      });
    return ok({ name, status: "installed", path: home, message: `installed in ${home}` });
  } catch (e) {
    return agentError("agent_install_failed", name, `installing ${name} (${spec}) failed: ${(e as Error).message}`);
  } finally {
    // Whatever went wrong, no half-built folder stays (after the rename there is none to remove).
    rmSync(staging, { recursive: true, force: true });
  }
}

/** npm in the staging folder: its output on success, or the error that says why it failed. */
async function npmStep(
  args: string[],
  staging: string,
  name: string,
  spec: string,
  options: InstallOptions,
): Promise<AgentOutcome<string>> {
  const run = await runNpm(args, staging, options.env ?? process.env);
  if (!run.started)
    return agentError(
      "npm_not_found",
      name,
      `cannot install ${name}: ${run.reason}; install Node.js with npm, or put npm on PATH`,
    );
  if (run.code !== 0 || run.signal)
    return agentError(
      "agent_install_failed",
      name,
      `installing ${name} (${spec}) failed at \`npm ${args[0]}\`: ${npmFailureCause(run.output, spec, options.offline === true)}`,
    );
  return ok(run.output);
}

/** The install itself, in `staging`: npm install without scripts, the allowed scripts, the bin checked. */
async function build(
  profile: AgentProfile,
  launch: PackageLaunch,
  staging: string,
  options: InstallOptions,
  progress: (line: string) => void,
): Promise<AgentOutcome<InstalledRecord>> {
  const { name } = profile;
  const spec = `${launch.package}@${launch.version}`;
  const npmVersion = await npmStep(["--version"], staging, name, spec, options);
  if (!npmVersion.ok) return npmVersion;
  writeFileSync(
    join(staging, "package.json"),
    `${JSON.stringify({ private: true, name: `prp-agent-${name}`, dependencies: { [launch.package]: launch.version } }, null, 2)}\n`,
  );
  // No install script runs here: an install script is arbitrary code, of the agent and of every
  // package it depends on, run at install time with the user's rights. Only the packages the
  // profile names in installScripts get theirs, below.
  const mode = options.offline ? "--offline" : "--prefer-offline";
  progress(`  npm install ${mode} (no install scripts) in ${staging}`);
  const installed = await npmStep(
    ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--save-exact", mode],
    staging,
    name,
    spec,
    options,
  );
  if (!installed.ok) return installed;
  const scripts = launch.installScripts ?? [];
  if (scripts.length > 0) {
    progress(`  npm rebuild ${scripts.join(" ")} (the install scripts the profile names, no other)`);
    const rebuilt = await npmStep(["rebuild", ...scripts], staging, name, spec, options);
    if (!rebuilt.ok) return rebuilt;
  }
  if (!existsSync(installedBin(staging, launch)))
    return agentError(
      "agent_install_failed",
      name,
      `installing ${name} (${spec}) gave no node_modules/.bin/${launch.bin}: the package has no bin of that name (the profile's launch.bin)`,
    );
  return ok({
    package: launch.package,
    version: launch.version,
    bin: launch.bin,
    installedAt: new Date().toISOString(),
    node: process.version,
    npm: npmVersion.value.trim(),
  });
}
