import { readFileSync } from "node:fs";

/**
 * Established IPv4 TCP connections whose local port is `port`, as the kernel lists them: a
 * record of the socket's life that does not depend on what the process says about it.
 */
export function establishedOn(port: number): number {
  const local = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  return readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .filter((line) => {
      const [, localAddress, , state] = line.trim().split(/\s+/);
      return localAddress?.endsWith(local) && state === "01";
    }).length;
}
