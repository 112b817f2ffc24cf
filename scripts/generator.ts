import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, relative } from "node:path";
import { packageRoot } from "../src/contract/package-root.js";

export interface GeneratedFile {
  path: string;
  text: string;
}

/**
 * Writes generated files, or with `check` compares them to what is committed (after CRLF→LF)
 * and exits 1 naming every file that drifted, with the command that fixes it.
 */
export async function runGenerator(
  check: boolean,
  produce: () => Promise<GeneratedFile[]>,
  fix = "npm run generate",
): Promise<void> {
  const files = await produce();
  const root = packageRoot();
  const drifted: string[] = [];
  for (const file of files) {
    const name = relative(root, file.path);
    if (check) {
      const current = existsSync(file.path) ? readFileSync(file.path, "utf8").replace(/\r\n/g, "\n") : null;
      if (current !== file.text) drifted.push(name);
    } else {
      mkdirSync(dirname(file.path), { recursive: true });
      writeFileSync(file.path, file.text);
      console.log(`wrote ${name}`);
    }
  }
  if (drifted.length > 0) {
    console.error(`generated files are out of date: ${drifted.join(", ")}\nrun \`${fix}\` and commit the result`);
    process.exit(1);
  }
  if (check) console.log(`${files.length} generated files up to date`);
}
