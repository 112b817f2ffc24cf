import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** util-linux's unshare: /usr/bin first (where Debian keeps it), then PATH. */
export function unshareCommand(): string {
  for (const dir of ["/usr/bin", "/bin", ...(process.env.PATH ?? "").split(delimiter).filter(Boolean)]) {
    const path = join(dir, "unshare");
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return "unshare";
}

export type SandboxProbe = { ok: true } | { ok: false; reason: string };
let probed: SandboxProbe | null = null;

/**
 * Whether this kernel lets this user make the namespaces the sandbox needs, asked once per
 * process by making them (an unprivileged user namespace can be forbidden by sysctl, by a
 * container's seccomp policy or by AppArmor; /proc must be mountable for the new PID namespace).
 */
export function probeSandbox(): SandboxProbe {
  if (probed) return probed;
  if (process.platform !== "linux")
    return (probed = { ok: false, reason: `namespaces are a Linux facility; this is ${process.platform}` });
  const unshare = unshareCommand();
  const r = spawnSync(
    unshare,
    [
      "--user",
      "--map-root-user",
      "--mount",
      "--pid",
      "--fork",
      "--kill-child",
      "--mount-proc",
      "/bin/sh",
      "-c",
      "mount -t tmpfs prp-probe /tmp",
    ],
    { encoding: "utf8", timeout: 10_000 },
  );
  if (r.error) return (probed = { ok: false, reason: `cannot run ${unshare} (util-linux): ${r.error.message}` });
  if (r.status !== 0)
    return (probed = {
      ok: false,
      reason: `the kernel refused the namespaces: ${(r.stderr || `exit ${r.status ?? r.signal}`).trim().split("\n").pop()}`,
    });
  return (probed = { ok: true });
}
