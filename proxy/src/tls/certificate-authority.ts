// The project CA the proxy will sign interception leaves with (docs/proxy.md "Certificates"):
// generated on first run, persisted (the key readable by its owner only), loaded on later runs, and
// downloadable as PEM and DER so devices can install it. node-forge builds the certificate; the RSA
// key comes from Node's crypto (OpenSSL), as the reference notes recommend for speed.
import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import forge from 'node-forge';
import { certificateSerialNumber } from './serial-number.ts';

export interface CertificateAuthority {
  certPem: string;
  keyPem: string;
  certDer: Buffer;
  /** SHA-256 of the DER certificate, colon-separated hex, as devices display it. */
  fingerprint256: string;
}

export class CertificateAuthorityError extends Error {
  override name = 'CertificateAuthorityError';
}

const CERT_FILE = 'ca.pem';
const KEY_FILE = 'ca.key';
const VALIDITY_YEARS = 10;

function describe(certPem: string, keyPem: string): CertificateAuthority {
  const x509 = new X509Certificate(certPem);
  return { certPem, keyPem, certDer: x509.raw, fingerprint256: x509.fingerprint256 };
}

function createAuthority(commonName: string): { certPem: string; keyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
  cert.serialNumber = certificateSerialNumber();
  const now = new Date();
  cert.validity.notBefore = new Date(now.getTime() - 24 * 3600 * 1000);
  cert.validity.notAfter = new Date(now.getTime());
  cert.validity.notAfter.setFullYear(now.getFullYear() + VALIDITY_YEARS);
  const subject = [
    { name: 'commonName', value: commonName },
    { name: 'organizationName', value: 'Capture Platform' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(privateKey), forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: privateKey };
}

/**
 * The CA stored in `dir`, created there on first use. An unreadable or inconsistent stored CA is
 * an error, never silently replaced: devices trust the existing certificate.
 */
export function loadOrCreateCertificateAuthority(
  dir: string,
  commonName = 'Capture Platform Local CA',
): CertificateAuthority {
  const certPath = join(dir, CERT_FILE);
  const keyPath = join(dir, KEY_FILE);
  if (existsSync(certPath) || existsSync(keyPath)) {
    try {
      const authority = describe(readFileSync(certPath, 'utf8'), readFileSync(keyPath, 'utf8'));
      const x509 = new X509Certificate(authority.certPem);
      if (!x509.ca) throw new Error('the stored certificate is not a CA');
      if (!x509.checkPrivateKey(createPrivateKey(authority.keyPem))) {
        throw new Error('the stored key does not belong to the stored certificate');
      }
      return authority;
    } catch (error) {
      throw new CertificateAuthorityError(
        `cannot use the CA in ${dir}: ${(error as Error).message}; move it away to create a new one`,
        { cause: error },
      );
    }
  }
  mkdirSync(dir, { recursive: true });
  const created = createAuthority(commonName);
  writeFileSync(keyPath, created.keyPem, { mode: 0o600 });
  chmodSync(keyPath, 0o600);
  writeFileSync(certPath, created.certPem);
  return describe(created.certPem, created.keyPem);
}
