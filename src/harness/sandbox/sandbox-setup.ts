/*
 * Builds the view and becomes PID 1 (sandbox-init.ts): run by /bin/sh as the first child of
 * LAUNCH, so as PID 1 of a fresh PID namespace and root of fresh user and mount namespaces. Arguments: the empty folder that becomes the root, the working directory,
 * the runner's uid and gid, node, the init script, unshare, then `OP PATH [TARGET]` steps
 * (mount-plan.ts) up to `--`, then the harness's command line. Names are prefixed: the
 * harness's environment passes through. Descriptor 3 is PID 1's status channel, 4 the
 * launcher's pipe; both go on to PID 1.
 *
 * Written with util-linux's mount, pivot_root and unshare rather than bubblewrap: those are on
 * every Debian-like system (util-linux is essential), bubblewrap is a package a fresh machine may
 * not have, and npm ships neither.
 */
export const SETUP = String.raw`set -eu
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

/*
 * The launcher: /bin/sh started by `unshare --user --map-root-user --mount --pid` without
 * --fork, so in the new user and mount namespaces while its first child becomes PID 1 of the new
 * PID namespace (it must fork nothing before that child). It is the process the supervisor leads
 * and signals as the harness's group. Arguments: SETUP, then SETUP's own.
 *
 * It replaces `unshare --fork`, which keeps its copies of the harness's stdin and stdout for its
 * whole life: a harness that closed its stdout while it kept running was never seen to. This one
 * hands stdio and the status descriptor to PID 1 and closes its own. PID 1 holds the read end of
 * the FIFO `<root>/.prp-alive` (made by the runner) and the launcher its only write end, so PID 1
 * sees the launcher die, however it dies: the parent-death signal util-linux set, which neither
 * a shell nor Node can. A signal to the group interrupts `wait`; the launcher waits on.
 */
export const LAUNCH = String.raw`prp_setup=$1 prp_root=$2
shift
trap : TERM INT HUP QUIT
# An asynchronous list's stdin is /dev/null before its own redirections: the harness's goes by 6.
exec 6<&0
/bin/sh -c "$prp_setup" prp-sandbox "$@" 0<&6 6<&- 4<"$prp_root/.prp-alive" &
prp_pid1=$!
exec 5>"$prp_root/.prp-alive" 0<&- 1>&- 3>&- 6<&-
while :; do
  if wait "$prp_pid1"; then exit 0; else prp_status=$?; fi
  kill -0 "$prp_pid1" 2>/dev/null || exit "$prp_status"
done`;
