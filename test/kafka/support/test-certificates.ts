/**
 * Certificates made at test time with openssl (never committed): a CA, the listener's certificate
 * for 127.0.0.1 and localhost, client certificates the CA signed, and one it did not.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

export interface Pem {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
}

export interface TestCertificates {
  dir: string;
  ca: Pem;
  server: Pem;
  /** Signed by the CA, subject as given. */
  client(subject: string): Pem;
  /** Self-signed: no chain to the CA. */
  untrusted: Pem;
}

export function makeCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-tls-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const read = (name: string): Pem => ({
    cert: readFileSync(join(dir, `${name}.crt`), 'utf8'),
    key: readFileSync(join(dir, `${name}.key`), 'utf8'),
    certFile: join(dir, `${name}.crt`),
    keyFile: join(dir, `${name}.key`),
  });
  /** A new P-256 key `{name}.key` and, with `-x509`, a self-signed certificate, else a request `{name}.csr`. */
  const newKey = (name: string, subject: string, ...self: string[]) =>
    openssl(
      ...['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', subject],
      ...['-keyout', `${name}.key`],
      ...(self.length > 0 ? ['-x509', '-days', '2', '-out', `${name}.crt`, ...self] : ['-new', '-out', `${name}.csr`]),
    );
  let serial = 1;
  /** `{name}.csr` signed by the CA, with the extensions given. */
  const sign = (name: string, ext: string) => {
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(
      ...['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-days', '2'],
      ...['-set_serial', String(serial++), '-out', `${name}.crt`, '-extfile', `${name}.ext`],
    );
  };
  newKey(
    'ca',
    '/O=Test/CN=Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  newKey('server', '/CN=localhost');
  sign('server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  newKey('untrusted', '/O=Acme/OU=eng/CN=mallory', '-addext', 'basicConstraints=CA:FALSE');
  let clients = 0;
  return {
    dir,
    ca: read('ca'),
    server: read('server'),
    untrusted: read('untrusted'),
    client(subject) {
      const name = `client${clients++}`;
      newKey(name, subject);
      sign(name, 'extendedKeyUsage=clientAuth\n');
      return read(name);
    },
  };
}
