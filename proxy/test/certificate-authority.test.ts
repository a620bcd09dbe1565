// The project CA: created once with the properties a device will check, persisted with a private
// key file, reused on the next start, refused (not replaced) when the stored files are wrong, and
// served by the proxy as PEM and DER without forwarding.
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CaptureWriter,
  CertificateAuthorityError,
  loadOrCreateCertificateAuthority,
  startProxy,
} from '../src/index.ts';
import { certificateSerialNumber } from '../src/tls/serial-number.ts';
import { LOOPBACK_DESTINATIONS } from './helpers/origins.ts';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-ca-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('loadOrCreateCertificateAuthority', () => {
  it('creates a self-signed CA valid for ten years, with a private key file', () => {
    const dir = tempDir();
    const authority = loadOrCreateCertificateAuthority(dir);
    const x509 = new X509Certificate(authority.certPem);
    expect(x509.ca).toBe(true);
    expect(x509.subject).toContain('CN=Capture Platform Local CA');
    expect(x509.verify(x509.publicKey)).toBe(true);
    const years = (Date.parse(x509.validTo) - Date.now()) / (365 * 24 * 3600 * 1000);
    expect(years).toBeGreaterThan(9.9);
    expect(statSync(join(dir, 'ca.key')).mode & 0o777).toBe(0o600);
    expect(new X509Certificate(authority.certDer).fingerprint256).toBe(authority.fingerprint256);
  });

  it('reuses the stored CA on the next start', () => {
    const dir = tempDir();
    const first = loadOrCreateCertificateAuthority(dir);
    expect(loadOrCreateCertificateAuthority(dir).fingerprint256).toBe(first.fingerprint256);
  });

  it('refuses a stored CA whose key does not match, instead of replacing it', () => {
    const dir = tempDir();
    loadOrCreateCertificateAuthority(dir);
    const other = loadOrCreateCertificateAuthority(tempDir());
    writeFileSync(join(dir, 'ca.key'), other.keyPem);
    expect(() => loadOrCreateCertificateAuthority(dir)).toThrow(CertificateAuthorityError);
  });
});

describe('certificateSerialNumber', () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const certificateWithSerial = (serialNumber: string) => {
    const cert = forge.pki.createCertificate();
    cert.publicKey = forge.pki.publicKeyFromPem(
      publicKey.export({ type: 'spki', format: 'pem' }) as string,
    );
    cert.serialNumber = serialNumber;
    cert.validity.notBefore = new Date();
    cert.validity.notAfter = new Date(Date.now() + 3600_000);
    cert.setSubject([{ name: 'commonName', value: 'serial.test' }]);
    cert.setIssuer([{ name: 'commonName', value: 'serial.test' }]);
    const key = privateKey.export({ type: 'pkcs1', format: 'pem' }) as string;
    cert.sign(forge.pki.privateKeyFromPem(key), forge.md.sha256.create());
    return new X509Certificate(forge.pki.certificateToPem(cert));
  };

  // Random bytes 00 00 0x.. once gave a padded INTEGER OpenSSL refused ("illegal padding").
  it.each([
    ['all zero', Buffer.alloc(16)],
    ['two zero bytes, then a small one', Buffer.from(`00007f${'ab'.repeat(13)}`, 'hex')],
    ['all ones', Buffer.alloc(16, 0xff)],
    ['top bit only', Buffer.from(`80${'00'.repeat(15)}`, 'hex')],
  ])('gives a positive 16-byte serial OpenSSL accepts from %s random bytes', (_case, random) => {
    const serial = certificateSerialNumber(random);
    expect(serial).toMatch(/^[4-7][0-9a-f]{31}$/);
    expect(certificateWithSerial(serial).serialNumber.toLowerCase()).toBe(serial);
  });

  it('keeps the other 126 bits random', () => {
    const serials = new Set(Array.from({ length: 1000 }, () => certificateSerialNumber()));
    expect(serials.size).toBe(1000);
  });

  it('refuses a random source of the wrong length', () => {
    expect(() => certificateSerialNumber(Buffer.alloc(8))).toThrow(RangeError);
  });
});

describe('CA download', () => {
  it('serves the CA as PEM and DER from the proxy itself', async () => {
    const dir = tempDir();
    const ca = loadOrCreateCertificateAuthority(dir);
    // No database here: the writer would only be used by forwarded traffic.
    const writer = new CaptureWriter({
      dbUrl: 'postgresql://nobody@127.0.0.1:1/none',
      spoolDir: join(dir, 'spool'),
      logger: pino({ level: 'silent' }),
    });
    const proxy = await startProxy({
      port: 0,
      writer,
      allowlist: ['127.0.0.0/8'],
      destinations: LOOPBACK_DESTINATIONS,
      ca,
      logger: pino({ level: 'silent' }),
    });
    const fetchBytes = (path: string) =>
      new Promise<{ type: string | undefined; body: Buffer }>((resolve) => {
        http.get({ host: '127.0.0.1', port: proxy.port, path }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({ type: response.headers['content-type'], body: Buffer.concat(chunks) }),
          );
        });
      });
    try {
      const pem = await fetchBytes('/ca.pem');
      expect(pem.type).toBe('application/x-pem-file');
      expect(new X509Certificate(pem.body).fingerprint256).toBe(ca.fingerprint256);
      const der = await fetchBytes('/ca.der');
      expect(der.type).toBe('application/x-x509-ca-cert');
      expect(new X509Certificate(der.body).fingerprint256).toBe(ca.fingerprint256);
    } finally {
      await proxy.stop();
      await writer.stop();
    }
  });
});
