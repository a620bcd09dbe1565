// A throwaway CA for tests and server certificates it signs for an IP address, built as the
// proxy builds its own (proxy/src/tls/certificate-authority.ts): node-forge for the certificate,
// Node's crypto for the RSA key.
import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import forge from 'node-forge';

export interface TestCa {
  certPem: string;
  keyPem: string;
  /** The certificate as DER, as certutil and devices take it. */
  certDer: Buffer;
}

export interface ServerCertificate {
  certPem: string;
  keyPem: string;
}

function generateKeys(): { publicKey: string; privateKey: string } {
  return generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
}

// RFC 5280 §4.1.2.2: a positive serial; the top bits 01 keep it 16 bytes and minimally encoded
// (proxy/src/tls/serial-number.ts says why node-forge needs that).
function drawSerial(): string {
  const serial = randomBytes(16);
  serial[0] = 0x40 | ((serial[0] as number) & 0x3f);
  return serial.toString('hex');
}

function createCertificate(publicKey: string, validDays: number): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
  cert.serialNumber = drawSerial();
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 24 * 3600 * 1000);
  cert.validity.notAfter = new Date(now + validDays * 24 * 3600 * 1000);
  return cert;
}

/** A CA certificate and key, valid for a year, held in memory only. */
export function createTestCa(commonName = 'Capture Test CA'): TestCa {
  const { publicKey, privateKey } = generateKeys();
  const cert = createCertificate(publicKey, 365);
  const subject = [{ name: 'commonName', value: commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(privateKey), forge.md.sha256.create());
  const certPem = forge.pki.certificateToPem(cert);
  return { certPem, keyPem: privateKey, certDer: new X509Certificate(certPem).raw };
}

/** A TLS server certificate for `ipAddress` (an IP subjectAltName), signed by `ca`. */
export function issueServerCertificate(ca: TestCa, ipAddress: string): ServerCertificate {
  const { publicKey, privateKey } = generateKeys();
  const cert = createCertificate(publicKey, 30);
  cert.setSubject([{ name: 'commonName', value: ipAddress }]);
  cert.setIssuer(forge.pki.certificateFromPem(ca.certPem).subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    // RFC 5280 §4.2.1.6: an iPAddress entry (type 7); browsers match IPs against it only.
    { name: 'subjectAltName', altNames: [{ type: 7, ip: ipAddress }] },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(ca.keyPem), forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: privateKey };
}
