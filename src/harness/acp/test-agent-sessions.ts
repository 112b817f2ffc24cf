import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

type Update = Record<string, unknown>;

/**
 * The test agent's sessions. With a directory, each session is a JSONL file there — a header,
 * then every session/update the agent sent in it — so an agent process started later can load
 * it and replay its history, as a real agent does from its own store. Session ids are numbered
 * by the files already there: the same directory always gives the same ids. Without a
 * directory, sessions live and die with the process.
 */
export class TestAgentSessions {
  private readonly memory = new Map<string, Update[]>();

  constructor(private readonly dir: string | undefined) {
    if (dir) mkdirSync(dir, { recursive: true });
  }

  create(cwd: string): string {
    const n = this.dir ? readdirSync(this.dir).filter((f) => f.endsWith(".jsonl")).length + 1 : this.memory.size + 1;
    const id = `acp_test_session_${n}`;
    if (this.dir) appendFileSync(this.file(id), `${JSON.stringify({ sessionId: id, cwd })}\n`, { flag: "wx" });
    else this.memory.set(id, []);
    return id;
  }

  record(id: string, update: Update): void {
    if (this.dir) appendFileSync(this.file(id), `${JSON.stringify(update)}\n`);
    else this.memory.get(id)?.push(update);
  }

  /** Every update of a known session, in order; null for a session this agent cannot find. */
  history(id: string): Update[] | null {
    if (!this.dir) return this.memory.get(id) ?? null;
    if (!/^acp_test_session_[0-9]+$/.test(id) || !existsSync(this.file(id))) return null;
    return readFileSync(this.file(id), "utf8")
      .trimEnd()
      .split("\n")
      .slice(1)
      .map((line) => JSON.parse(line) as Update);
  }

  private file(id: string): string {
    return join(this.dir!, `${id}.jsonl`);
  }
}
