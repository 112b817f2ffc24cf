import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { packageRoot } from "../../contract/package-root.js";
import { mountPlan, planArgs } from "./mount-plan.js";
import type { SandboxPaths } from "./sandbox-policy.js";
import { unshareCommand } from "./sandbox-probe.js";

/*
 * Builds the view and starts PID 1 (sandbox-init.ts), run by /bin/sh as root of a fresh user,
 * mount and PID namespace (`unshare --user --map-root-user --mount --pid --fork --kill-child`).
 * Arguments: the empty folder that becomes the root, the working directory, the runner's uid and
 * gid, node, the init script, unshare, then `OP PATH [TARGET]` steps (mount-plan.ts) up to `--`,
 * then the harness's command line. Names are prefixed: the harness's environment passes through.
 *
 * Written with util-linux's mount, pivot_root and unshare rather than bubblewrap: those are on
 * every Debian-like system (util-linux is essential), bubblewrap is a package a fresh machine may
 * not have, and npm ships neither.
 */
const SETUP = String.raw`set -eu
prp_root=$1 prp_cwd=$2 prp_uid=$3 prp_gid=$4 prp_node=$5 prp_init=$6 prp_unshare=$7
shift 7
prp_path=${"${PATH-}"} prp_had_path=${"${PATH+1}"}
PATH=/usr/sbin:/usr/bin:/sbin:/bin
prp_fail() { echo "prp-sandbox: $*" >&2; exit 125; }
mount -t tmpfs -o mode=0755,nosuid,nodev prp-root "$prp_root" || prp_fail "cannot mount the new root on $prp_root"
mkdir "$prp_root/dev" "$prp_root/proc" "$prp_root/tmp" "$prp_root/sys"
mount -t tmpfs -o mode=0755,nosuid,noexec prp-dev "$prp_root/dev"
mkdir "$prp_root/dev/pts" "$prp_root/dev/shm"
for prp_d in null zero random urandom; do : > "$prp_root/dev/$prp_d"; mount --bind "/dev/$prp_d" "$prp_root/dev/$prp_d"; done
if mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 prp-devpts "$prp_root/dev/pts" 2>/dev/null; then ln -s pts/ptmx "$prp_root/dev/ptmx"; fi
mount -t tmpfs -o mode=1777,nosuid,nodev prp-shm "$prp_root/dev/shm"
ln -s /proc/self/fd "$prp_root/dev/fd"
ln -s /proc/self/fd/0 "$prp_root/dev/stdin"; ln -s /proc/self/fd/1 "$prp_root/dev/stdout"; ln -s /proc/self/fd/2 "$prp_root/dev/stderr"
mount -t proc -o nosuid,nodev,noexec proc "$prp_root/proc" || prp_fail "cannot mount /proc for the new PID namespace"
mount --rbind /sys "$prp_root/sys" && mount -o remount,bind,ro,nosuid,nodev,noexec "$prp_root/sys"
mount -t tmpfs -o mode=1777,nosuid,nodev prp-tmp "$prp_root/tmp"
prp_hidden=
while [ "$1" != -- ]; do
  case $1 in
    ro|rw)
      if [ -d "$2" ]; then [ -d "$prp_root$2" ] || mkdir -p "$prp_root$2"; else mkdir -p "$prp_root${"${2%/*}"}"; [ -e "$prp_root$2" ] || : > "$prp_root$2"; fi
      mount --rbind "$2" "$prp_root$2" || prp_fail "cannot show $2"
      if [ "$1" = ro ]; then mount -o remount,bind,ro,nosuid,nodev "$prp_root$2" || prp_fail "cannot make $2 read-only"; fi
      shift 2 ;;
    link)
      [ -d "$prp_root${"${2%/*}"}" ] || mkdir -p "$prp_root${"${2%/*}"}"
      ln -s "$3" "$prp_root$2"
      shift 3 ;;
    hide)
      if [ -d "$prp_root$2" ]; then
        mount -t tmpfs -o mode=0755,nosuid,nodev,noexec prp-hidden "$prp_root$2" || prp_fail "cannot hide $2"
        prp_hidden="$prp_hidden$2
"
      elif [ -e "$prp_root$2" ]; then
        mount --bind /dev/null "$prp_root$2" || prp_fail "cannot hide $2"
      fi
      shift 2 ;;
    *) prp_fail "unknown step $1" ;;
  esac
done
shift
# A hidden folder stays writable until what is shown inside it has its mount point.
IFS='
'
for prp_h in $prp_hidden; do mount -o remount,bind,ro,nosuid,nodev,noexec "$prp_root$prp_h"; done
unset IFS
cd "$prp_root"
mkdir .prp-old-root
pivot_root . .prp-old-root || prp_fail "cannot pivot to the new root"
umount -l /.prp-old-root
rmdir /.prp-old-root
mount -o remount,bind,ro,nosuid,nodev /
cd "$prp_cwd" 2>/dev/null || cd /
unset OLDPWD
if [ "$prp_had_path" ]; then PATH=$prp_path; else unset PATH; fi
exec "$prp_node" "$prp_init" "$prp_unshare" "$prp_uid" "$prp_gid" "$@"`;

const INIT = fileURLToPath(new URL("./sandbox-init.js", import.meta.url));

/**
 * This package and the modules it runs with (the fake harness, the activity helper and PID 1 are
 * its code): its own node_modules wherever a link leads, and every node_modules folder above it,
 * where npm puts the dependencies of a package installed into another project.
 */
function ownRuntime(): string[] {
  const root = packageRoot();
  const folders = [root];
  const own = join(root, "node_modules");
  if (existsSync(own)) folders.push(realpathSync(own));
  for (let dir = root; dirname(dir) !== dir; dir = dirname(dir)) if (basename(dir) === "node_modules") folders.push(dir);
  return folders;
}

export interface SandboxedCommand {
  command: string;
  args: string[];
  /** Removes the empty folder the root was mounted on (in the sandbox's own mount namespace). */
  cleanup: () => void;
}

/**
 * The command line that runs `command args` in the sandbox with this view; the working
 * directory and every path of `paths` are absolute. Paths with a newline are refused: the setup
 * script keeps its list of hidden folders one a line.
 */
export function sandboxedCommand(paths: SandboxPaths, cwd: string, command: string, args: string[]): SandboxedCommand {
  // PID 1 is this package's init run by this node: both stay readable whatever the caller asked.
  const plan = mountPlan({ ...paths, readable: [...ownRuntime(), dirname(dirname(realpathSync(process.execPath))), ...paths.readable] });
  const bad = [cwd, ...plan.map((o) => o.path)].find((p) => p.includes("\n"));
  if (bad !== undefined) throw new Error(`the sandbox cannot show or hide a path with a newline: ${JSON.stringify(bad)}`);
  const root = mkdtempSync(join(tmpdir(), "prp-sandbox-"));
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  const unshare = unshareCommand();
  return {
    command: unshare,
    args: [
      "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child", "--propagation", "private",
      "/bin/sh", "-c", SETUP, "prp-sandbox", root, cwd, String(uid), String(gid), process.execPath, INIT, unshare,
      ...planArgs(plan), "--", command, ...args,
    ],
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}
