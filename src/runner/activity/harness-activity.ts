import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HarnessDriver } from "../../harness/harness-driver.js";
import { CONTEXT_ENV, DESCRIPTOR_FILE, HELPER_ENV, SECRET_ENV, helperPath } from "../../harness/notification-env.js";

const digest = (text: string): Buffer => createHash("sha256").update(text).digest();

/**
 * What runtime activity hands a harness, and how the runner tells that harness from anyone else
 * (a hostile agent of one run recorded activity into another run through its socket).
 *
 * - `dir`: a private (0700) folder of its own under the system's temporary folder, holding the
 *   endpoint's socket and descriptor and nothing else of the runner's: nothing the harness is
 *   given names the runner's state directory. It is the one path a sandbox must show the
 *   harness for runtime activity to work; `remove` deletes it when the runner ends.
 * - a secret per harness generation: `bind` draws a fresh random one before each start of the
 *   harness and puts it in `env` (PAPERCLIP_RUNTIME_NOTIFICATION_SECRET) for that start only;
 *   the endpoint serves a request only with the current one (`admits`, constant time), so
 *   another run's harness, an earlier harness of this run, or a process never given it is
 *   refused. The secret is in no file.
 */
export class HarnessActivity {
  private secret: Buffer | null = null;

  private constructor(
    readonly dir: string,
    /** The variables for the harness: the helper, the descriptor and the current generation's secret. Drivers read it at each start. */
    readonly env: Record<string, string>,
  ) {}

  static create(): HarnessActivity {
    const dir = mkdtempSync(join(tmpdir(), "prp-activity-")); // 0700
    return new HarnessActivity(dir, { [HELPER_ENV]: helperPath(), [CONTEXT_ENV]: join(dir, DESCRIPTOR_FILE) });
  }

  /** A new harness generation: a fresh secret in `env`; the previous one is refused from now on. */
  nextGeneration(): void {
    const secret = randomBytes(32).toString("base64url");
    this.env[SECRET_ENV] = secret;
    this.secret = digest(secret);
  }

  /** Whether `offered` is the current generation's secret. Digests of equal length are compared in constant time. */
  admits(offered: unknown): boolean {
    return this.secret !== null && typeof offered === "string" && timingSafeEqual(digest(offered), this.secret);
  }

  /** The driver, with a new generation drawn before each start of its harness. */
  bind(driver: HarnessDriver): HarnessDriver {
    return new Proxy(driver, {
      get: (target, key) => {
        if (key === "start") {
          return (...args: Parameters<HarnessDriver["start"]>) => {
            this.nextGeneration();
            target.start(...args);
          };
        }
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
