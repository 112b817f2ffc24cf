import { existsSync } from "node:fs";
import { dirname, isAbsolute, join, normalize } from "node:path";
import { readFileBounded } from "../contract/bounded-read.js";
import { sha256Digest } from "../contract/digest.js";
import type { ContentRef } from "../contract/generated/types.js";

export type { ContentRef };

export const contentRefOf = (uri: string, bytes: Uint8Array, mediaType: string): ContentRef => ({
  uri,
  sha256: sha256Digest(bytes),
  byteSize: bytes.byteLength,
  mediaType,
});

/**
 * Problems with the files a bundle references: each relative `uri` must name a file inside the
 * bundle's folder whose bytes have the recorded digest and size. References with a scheme
 * (`https:`, `s3:` …) point elsewhere and are not checked here.
 */
export function contentRefProblems(bundlePath: string, refs: Array<{ at: string; ref: ContentRef }>): string[] {
  const root = dirname(bundlePath);
  const problems: string[] = [];
  for (const { at, ref } of refs) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(ref.uri)) continue;
    const rel = normalize(ref.uri);
    if (isAbsolute(rel) || rel.startsWith("..")) {
      problems.push(`${at}: uri "${ref.uri}" leaves the bundle folder`);
      continue;
    }
    const file = join(root, rel);
    if (!existsSync(file)) {
      problems.push(`${at}: ${ref.uri} does not exist`);
      continue;
    }
    // Read no further than the recorded size: a larger file is a mismatch whatever its length.
    const read = readFileBounded(file, { maxBytes: ref.byteSize });
    if (!read.ok) {
      problems.push(
        read.error.code === "unreadable"
          ? `${at}: ${ref.uri} cannot be read: ${read.error.message}`
          : `${at}: ${ref.uri} is more than ${ref.byteSize} bytes, the size the bundle says`,
      );
      continue;
    }
    const bytes = read.bytes;
    if (bytes.byteLength !== ref.byteSize)
      problems.push(`${at}: ${ref.uri} is ${bytes.byteLength} bytes, the bundle says ${ref.byteSize}`);
    if (sha256Digest(bytes) !== ref.sha256) problems.push(`${at}: ${ref.uri} does not have the digest ${ref.sha256}`);
  }
  return problems;
}
