import { execFileSync } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Files a TLS test needs: a CA, a server certificate for 127.0.0.1 it signed, and a CA that signed nothing here. */
export interface TestCertificates {
  caCert: string;
  serverCert: string;
  serverKey: string;
  otherCaCert: string;
}

const openssl = (args: string[]) => execFileSync("/usr/bin/openssl", args, { stdio: ["ignore", "ignore", "pipe"] });

function makeCa(dir: string, name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}-key.pem`);
  openssl([
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    key,
    "-out",
    cert,
    "-days",
    "2",
    "-subj",
    `/CN=PRP test ${name}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign",
  ]);
  return { cert, key };
}

/**
 * Made with /usr/bin/openssl in `dir` (fresh keys every time, valid for two days): a test CA,
 * a server certificate for IP 127.0.0.1 (or the `ips` given) signed by it, and an unrelated CA.
 * Every file is 600.
 */
export function makeTestCertificates(dir: string, ips: readonly string[] = ["127.0.0.1"]): TestCertificates {
  const ca = makeCa(dir, "ca");
  const other = makeCa(dir, "other-ca");
  const serverKey = join(dir, "server-key.pem");
  const csr = join(dir, "server.csr");
  const serverCert = join(dir, "server.pem");
  const ext = join(dir, "server.ext");
  writeFileSync(
    ext,
    `subjectAltName=${ips.map((ip) => `IP:${ip}`).join(",")}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`,
  );
  openssl([
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    serverKey,
    "-out",
    csr,
    "-subj",
    `/CN=${ips[0]}`,
  ]);
  openssl([
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    ca.cert,
    "-CAkey",
    ca.key,
    "-CAcreateserial",
    "-out",
    serverCert,
    "-days",
    "2",
    "-extfile",
    ext,
  ]);
  for (const file of [ca.cert, other.cert, serverCert, serverKey]) chmodSync(file, 0o600);
  return { caCert: ca.cert, serverCert, serverKey, otherCaCert: other.cert };
}
