import { rootCertificates } from "node:tls";

/**
 * A fetch that trusts Node's root store plus `caPem` (a private CA's PEM certificates), for
 * `--api https://…` with `--ca-bundle-path`: the global fetch takes no CA, so this one goes
 * through its own undici Agent. Nothing else about the request changes. undici is loaded at the
 * first request, not at import: loading it reserves WebAssembly memory, which no other command
 * should pay for (a command under an address-space limit fails at start otherwise).
 */
export function caFetch(caPem: string): typeof fetch {
  let loaded: Promise<{ dispatcher: import("undici").Agent; send: typeof import("undici").fetch }> | undefined;
  // undici's Request and Response types are its own, the same objects as the global fetch's.
  return (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    loaded ??= import("undici").then(({ Agent, fetch: send }) => ({
      dispatcher: new Agent({ connect: { ca: [...rootCertificates, caPem] } }),
      send,
    }));
    const { dispatcher, send } = await loaded;
    return send(input as Parameters<typeof send>[0], { ...(init as Parameters<typeof send>[1]), dispatcher });
  }) as unknown as typeof fetch;
}
