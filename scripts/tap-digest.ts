/**
 * Repeats the failing tests of a `node --test` TAP stream just above its closing summary, so that
 * a CI log cut to its last lines still names what failed and where. Everything passes through
 * unchanged and in order, except the top-level summary (`# tests`, `# pass`, …), which is held
 * back and printed after the digest. The digest is TAP comments: a TAP reader ignores them.
 *
 * Written by hand: the reporters that ship with Node print either TAP with no digest or a spec
 * report with no TAP summary, and CI reads the TAP summary.
 */

const SUMMARY = /^# (?:tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) /;
const SUBTEST = /^(\s*)# Subtest: (.*)$/;
const NOT_OK = /^(\s*)not ok \d+ - (.*)$/;
/** The lines of a failure's YAML block worth repeating. */
const KEPT = /^\s*(?:location|failureType|error|code):/;
/** How many lines of a multi-line error (`error: |-`) the digest keeps. */
const ERROR_LINES = 6;

interface Failure {
  name: string;
  details: string[];
  parent: boolean;
}

export class TapDigest {
  private readonly names: string[] = [];
  private readonly failures: Failure[] = [];
  private readonly summary: string[] = [];
  private current: Failure | undefined;
  private inBlock = false;
  /** Inside a multi-line error: the indentation of its key, and how many more lines to keep. */
  private errorIndent = -1;
  private errorLines = 0;

  /** The lines to print now for one input line (without its newline). */
  push(line: string): string[] {
    if (SUMMARY.test(line)) {
      this.summary.push(line);
      return [];
    }
    this.follow(line);
    return [line];
  }

  /** The digest and the held summary, once the stream has ended. */
  end(): string[] {
    const leaves = this.failures.filter((f) => !f.parent);
    const digest =
      leaves.length === 0
        ? []
        : [
            `# failing tests (${leaves.length}):`,
            ...leaves.flatMap((f) => [`#   ${f.name}`, ...f.details.map((d) => `#     ${d}`)]),
          ];
    return [...digest, ...this.summary];
  }

  private follow(line: string): void {
    const subtest = SUBTEST.exec(line);
    if (subtest) {
      const depth = subtest[1]!.length / 4;
      this.names.length = depth;
      this.names.push(subtest[2]!);
      return;
    }
    const notOk = NOT_OK.exec(line);
    if (notOk) {
      const depth = notOk[1]!.length / 4;
      const path = [...this.names.slice(0, depth), notOk[2]!];
      this.current = { name: path.join(" > "), details: [], parent: false };
      this.failures.push(this.current);
      this.inBlock = false;
      return;
    }
    if (!this.current) return;
    const trimmed = line.trim();
    if (trimmed === "---") {
      this.inBlock = true;
      return;
    }
    if (trimmed === "...") {
      this.inBlock = false;
      this.current = undefined;
      return;
    }
    if (!this.inBlock) return;
    const indent = line.length - line.trimStart().length;
    if (this.errorIndent >= 0 && indent > this.errorIndent) {
      if (this.errorLines > 0) this.current.details.push(`  ${trimmed}`);
      this.errorLines -= 1;
      return;
    }
    this.errorIndent = -1;
    if (!KEPT.test(line)) return;
    if (/^\s*failureType: 'subtestsFailed'/.test(line)) this.current.parent = true;
    if (/^\s*error: [|>]-?$/.test(line)) {
      this.errorIndent = indent;
      this.errorLines = ERROR_LINES;
    }
    this.current.details.push(trimmed);
  }
}
