import * as fs from 'fs';
import * as path from 'path';
import * as selfsigned from 'selfsigned';
import type { AppConfig } from './config';

export interface TlsMaterial {
  readonly cert: string;
  readonly key: string;
  readonly generated: boolean;
  readonly certPath: string;
}

/**
 * The certificate the server presents: the configured pair, or a self-signed one for
 * localhost/127.0.0.1 made on first start under `<dataDir>/tls/` and reused afterwards.
 */
export function loadOrCreateTls(config: AppConfig): TlsMaterial {
  if (config.tlsCert && config.tlsKey) {
    return { cert: fs.readFileSync(config.tlsCert, 'utf8'), key: fs.readFileSync(config.tlsKey, 'utf8'), generated: false, certPath: config.tlsCert };
  }
  const dir = path.join(config.dataDir, 'tls');
  const certPath = path.join(dir, 'cert.pem');
  const keyPath = path.join(dir, 'key.pem');
  if (fs.existsSync(certPath) && fs.existsSync(keyPath)) {
    return { cert: fs.readFileSync(certPath, 'utf8'), key: fs.readFileSync(keyPath, 'utf8'), generated: false, certPath };
  }
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pems = selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    keySize: 2048,
    days: 3650,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
    ],
  });
  // Write the key first and rename into place, so a crash never leaves a cert without its key.
  fs.writeFileSync(keyPath + '.tmp', pems.private, { mode: 0o600 });
  fs.renameSync(keyPath + '.tmp', keyPath);
  fs.writeFileSync(certPath + '.tmp', pems.cert);
  fs.renameSync(certPath + '.tmp', certPath);
  return { cert: pems.cert, key: pems.private, generated: true, certPath };
}
