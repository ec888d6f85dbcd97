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
  const req = (name: string, subject: string) =>
    openssl(
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subject,
    );
  let serial = 1;
  const sign = (name: string, ext: string) => {
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-set_serial',
      String(serial++),
      '-days',
      '2',
      '-out',
      `${name}.crt`,
      '-extfile',
      `${name}.ext`,
    );
  };
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/O=Test/CN=Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  req('server', '/CN=localhost');
  sign('server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'untrusted.key',
    '-out',
    'untrusted.crt',
    '-days',
    '2',
    '-subj',
    '/O=Acme/OU=eng/CN=mallory',
  );
  let clients = 0;
  return {
    dir,
    ca: read('ca'),
    server: read('server'),
    untrusted: read('untrusted'),
    client(subject) {
      const name = `client${clients++}`;
      req(name, subject);
      sign(name, 'extendedKeyUsage=clientAuth\n');
      return read(name);
    },
  };
}
