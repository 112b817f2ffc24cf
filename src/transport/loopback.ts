import { BlockList, isIP } from "node:net";

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");
LOOPBACK.addSubnet("::ffff:127.0.0.0", 104, "ipv6"); // IPv4-mapped 127/8

/**
 * Whether `host` reaches only this machine: the one loopback rule of every listener and URL check.
 *
 * An IP literal (IPv6 with or without brackets) is loopback when it is in 127.0.0.0/8, is ::1,
 * or is an IPv4-mapped 127/8 address. A name is not: `localhost` means whatever the resolver
 * says, and a plaintext ws:// endpoint or listener must not hang on that (runtime.md §5.1), so
 * the runner's connect URL and the authority's listener take addresses only.
 *
 * `{ localhost: true }` also accepts the name `localhost`, for the console alone: its listen
 * address only decides a warning, and in its `Host` check the name comes from a browser, which
 * resolves `localhost` to loopback itself and which a rebinding page cannot make send it.
 */
export function isLoopback(host: string, options: { localhost?: boolean } = {}): boolean {
  if (options.localhost === true && host.toLowerCase() === "localhost") return true;
  const address = host.replace(/^\[(.*)\]$/, "$1");
  const family = isIP(address);
  return family !== 0 && LOOPBACK.check(address, family === 4 ? "ipv4" : "ipv6");
}
