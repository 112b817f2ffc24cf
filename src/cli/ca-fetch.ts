import { rootCertificates } from "node:tls";
import { Agent, fetch as undiciFetch } from "undici";

/**
 * A fetch that trusts Node's root store plus `caPem` (a private CA's PEM certificates), for
 * `--api https://…` with `--ca-bundle-path`: the global fetch takes no CA, so this one goes
 * through its own undici Agent. Nothing else about the request changes.
 */
export function caFetch(caPem: string): typeof fetch {
  const dispatcher = new Agent({ connect: { ca: [...rootCertificates, caPem] } });
  // undici's Request and Response types are its own, the same objects as the global fetch's.
  return ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher,
    })) as unknown as typeof fetch;
}
