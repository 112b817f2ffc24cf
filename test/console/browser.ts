import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { chromium, type BrowserContext } from "playwright-core";

const execFileAsync = promisify(execFile);

/**
 * The Chromium the browser tests drive: by default the one `@sparticuz/chromium` ships, pinned
 * in package-lock.json, so that `npm ci && npm test` needs no system package and every machine
 * runs the same build (Playwright's own browser download cannot work on these machines). Set
 * PRP_CHROMIUM to a Chromium binary (e.g. Debian's /usr/bin/chromium) to drive that instead.
 */
export const PRP_CHROMIUM = process.env.PRP_CHROMIUM || undefined;

/**
 * The flags of a browser that must not reach the network or keep state between tests. Not the
 * package's `chromium.args`: they are for AWS Lambda, and --single-process breaks Playwright's
 * persistent contexts while --disable-web-security and the site-isolation switches would void
 * the tests that another origin cannot frame or call the console.
 */
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface Browser {
  context: BrowserContext;
  /** Closes the browser (and its processes) and removes its profile. */
  close(): Promise<void>;
}

/** Chromium, headless, on a fresh profile. */
export async function launchChromium(): Promise<Browser> {
  const { executablePath, env } = await chromiumBinary();
  const profile = mkdtempSync(join(tmpdir(), "prp-chromium-"));
  // A persistent context is how Playwright takes a --user-data-dir of our choosing: a fresh one.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    env,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

interface ChromiumBinary {
  executablePath: string;
  /** The environment it runs in (undefined: ours). */
  env?: Record<string, string>;
}

/**
 * PRP_CHROMIUM, or the pinned package's Chromium, unpacked once per checkout and version.
 * A missing binary fails the test rather than skipping it: a skipped browser test would pass
 * for a console nobody has seen work.
 */
async function chromiumBinary(): Promise<ChromiumBinary> {
  if (PRP_CHROMIUM !== undefined) {
    if (!existsSync(PRP_CHROMIUM))
      throw new Error(
        `PRP_CHROMIUM is ${PRP_CHROMIUM}, which does not exist: unset it to use the Chromium of @sparticuz/chromium, or point it at a Chromium binary`,
      );
    return { executablePath: PRP_CHROMIUM };
  }
  const dir = await unpackedChromium();
  return {
    executablePath: join(dir, "chromium"),
    env: {
      ...(process.env as Record<string, string>),
      // Its own NSS and expat (built for Amazon Linux 2023, older than any glibc we meet), so a
      // machine without Chromium's libraries still runs it; the same libraries everywhere.
      LD_LIBRARY_PATH: [join(dir, "al2023", "lib"), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":"),
      // Its own fonts, so text renders the same whatever the machine has installed.
      FONTCONFIG_PATH: join(dir, "fonts"),
    },
  };
}

/**
 * The package unpacks its brotli-compressed Chromium at run time, into a fixed `os.tmpdir()/chromium`
 * that it reuses as soon as the file exists: test files run in parallel processes would launch a
 * binary another one is still writing, and another version's binary would be taken for this one.
 * So it unpacks here into a private folder (TMPDIR points the package at it) and the folder is
 * renamed into place: a folder at the final path is always complete. Processes that race both
 * unpack; the first rename wins and the others drop their copy.
 */
async function unpackedChromium(): Promise<string> {
  const entry = import.meta.resolve("@sparticuz/chromium");
  const root = join(dirname(fileURLToPath(entry)), "..", "..");
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  // Under node_modules: owned by whoever installed it, and gone with the install it belongs to.
  const dir = join(root, "..", "..", ".cache", `prp-chromium-${version}`);
  if (existsSync(join(dir, "chromium"))) return dir;
  mkdirSync(dirname(dir), { recursive: true });
  const staging = mkdtempSync(`${dir}.unpacking-`);
  try {
    // In a child, so that neither variable reaches this process; AWS_LAMBDA_JS_RUNTIME is how the
    // package is told to unpack its Amazon Linux libraries (al2023/lib) too.
    const script = `const { default: chromium } = await import(${JSON.stringify(entry)}); await chromium.executablePath();`;
    await execFileAsync(process.execPath, ["--input-type=module", "-e", script], {
      env: { ...process.env, TMPDIR: staging, AWS_LAMBDA_JS_RUNTIME: "nodejs20.x" },
    });
    for (const file of ["chromium", join("al2023", "lib", "libnss3.so"), join("fonts", "fonts.conf")]) {
      if (!existsSync(join(staging, file)))
        throw new Error(`@sparticuz/chromium ${version} unpacked no ${file} into ${staging}`);
    }
    // Its fonts.conf names /tmp/fonts; this one names the folder's own, where it will be renamed to.
    writeFileSync(join(staging, "fonts", "fonts.conf"), fontsConf(join(dir, "fonts")));
    try {
      renameSync(staging, dir);
    } catch (error) {
      if (!existsSync(join(dir, "chromium"))) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return dir;
}

/** A fontconfig file for the fonts in `dir`, keeping its cache there too. */
function fontsConf(dir: string): string {
  const xml = (path: string) => path.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  return `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>${xml(join(dir, "fonts"))}</dir>
  <cachedir>${xml(join(dir, "cache"))}</cachedir>
</fontconfig>
`;
}
