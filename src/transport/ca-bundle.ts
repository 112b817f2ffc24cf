import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { X509Certificate } from "node:crypto";
import { fail, ok, type Result } from "./errors.js";

/** runtime.md §5.1: the private CA bundle is a file of at most 4 MiB. */
export const MAX_CA_BUNDLE_BYTES = 4 * 1024 * 1024;

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The CA bundle a wss:// runner trusts besides Node's root store (`--ca-bundle-path`, §5.1): a
 * regular file (not a symlink) that nobody but its owner can write — whoever can write it
 * chooses whom the runner trusts — of at most 4 MiB, holding one or more PEM certificates, each
 * of which must parse. Refused as `ca_bundle_invalid`, naming what is wrong.
 */
export function readCaBundle(path: string): Result<string> {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "error";
    return fail(
      "ca_bundle_invalid",
      "",
      `${path}: ${code === "ELOOP" ? "the CA bundle is a symbolic link" : `the CA bundle cannot be opened (${code})`}`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return fail("ca_bundle_invalid", "", `${path}: the CA bundle is not a regular file`);
    if ((st.mode & 0o022) !== 0)
      return fail(
        "ca_bundle_invalid",
        "",
        `${path}: the CA bundle has mode ${(st.mode & 0o777).toString(8)}; group and others must not be able to write it (chmod 644 or 600)`,
      );
    if (st.size > MAX_CA_BUNDLE_BYTES)
      return fail(
        "ca_bundle_invalid",
        "",
        `${path}: the CA bundle is ${st.size} bytes; the bound is ${MAX_CA_BUNDLE_BYTES}`,
      );
    const buffer = Buffer.alloc(st.size);
    const text = buffer.toString("utf8", 0, readSync(fd, buffer, 0, st.size, 0));
    const certificates = text.match(PEM_CERTIFICATE) ?? [];
    if (certificates.length === 0)
      return fail("ca_bundle_invalid", "", `${path}: the CA bundle holds no PEM certificate`);
    for (const [i, pem] of certificates.entries()) {
      try {
        new X509Certificate(pem);
      } catch (err) {
        return fail("ca_bundle_invalid", "", `${path}: certificate ${i + 1} does not parse: ${(err as Error).message}`);
      }
    }
    return ok(certificates.join("\n"));
  } finally {
    closeSync(fd);
  }
}
