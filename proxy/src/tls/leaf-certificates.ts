// Leaf certificates for intercepted hosts, signed by the project CA. The reference tools make a
// cold host cheap by reusing one leaf key (mockttp: one key pair per process) and caching the
// TLS context per name; forge builds the certificate and OpenSSL signs it, since forge's
// pure-JS RSA signature costs ~20 ms where `crypto.privateEncrypt` costs ~0.3 ms
// (proxy-anchors §2.2, §2.3). Concurrent first hits on one name share one signing.
import {
  constants,
  createPrivateKey,
  generateKeyPair,
  type KeyObject,
  privateEncrypt,
} from 'node:crypto';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { promisify } from 'node:util';
import forge from 'node-forge';
import type { CertificateAuthority } from './certificate-authority.ts';
import { certificateSerialNumber } from './serial-number.ts';

/** DER prefix of a DigestInfo for SHA-256 (RFC 8017 §9.2 note 1): PKCS#1 v1.5 signs it + digest. */
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex');
/** Leaves live 45 days, the CA/B forum's coming maximum, so strict clients accept them. */
const LEAF_VALIDITY_MS = 45 * 24 * 3600 * 1000;
/** Contexts are rebuilt an hour before their leaf expires. */
const RENEW_BEFORE_MS = 3600 * 1000;

export interface LeafContext {
  context: tls.SecureContext;
  certPem: string;
  /** The process's shared leaf key. */
  keyPem: string;
  expiresAt: number;
}

export interface LeafCertificateCacheOptions {
  /** Contexts kept (least recently used evicted); mitmproxy keeps 100, we keep more. */
  capacity?: number;
  /** The clock validity and renewal are computed from (tests move it). */
  now?: () => number;
}

export class LeafCertificateCache {
  private readonly caCert: forge.pki.Certificate;
  private readonly caKey: KeyObject;
  private readonly leafKeyPem: string;
  private readonly leafPublicKey: forge.pki.PublicKey;
  /** The CA's key identifier as forge wants it for authorityKeyIdentifier: raw bytes. */
  private readonly caKeyId: string;
  private readonly contexts = new Map<string, LeafContext>();
  private readonly pending = new Map<string, Promise<LeafContext>>();
  private readonly capacity: number;
  private readonly now: () => number;
  private issuedCount = 0;

  private constructor(
    authority: CertificateAuthority,
    leafKeyPem: string,
    options: LeafCertificateCacheOptions,
  ) {
    this.caCert = forge.pki.certificateFromPem(authority.certPem);
    this.caKey = createPrivateKey(authority.keyPem);
    this.leafKeyPem = leafKeyPem;
    const leafKey = forge.pki.privateKeyFromPem(leafKeyPem);
    this.leafPublicKey = forge.pki.setRsaPublicKey(leafKey.n, leafKey.e);
    this.caKeyId = forge.pki
      .getPublicKeyFingerprint(this.caCert.publicKey, {
        type: 'RSAPublicKey',
      })
      .getBytes();
    this.capacity = options.capacity ?? 1000;
    this.now = options.now ?? Date.now;
  }

  /** One RSA-2048 leaf key per process, generated off the event loop (libuv pool). */
  static async create(
    authority: CertificateAuthority,
    options: LeafCertificateCacheOptions = {},
  ): Promise<LeafCertificateCache> {
    const { privateKey } = await promisify(generateKeyPair)('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    });
    return new LeafCertificateCache(authority, privateKey, options);
  }

  /** Certificates signed so far (cache misses), for /health and the benchmark. */
  get issued(): number {
    return this.issuedCount;
  }

  /** The context for `name` (a DNS name or an IP address), signing a leaf on first use. */
  contextFor(name: string): Promise<LeafContext> {
    const key = name.toLowerCase();
    const cached = this.contexts.get(key);
    if (cached && cached.expiresAt - RENEW_BEFORE_MS > this.now()) {
      // Map order is insertion order: re-inserting marks it most recently used.
      this.contexts.delete(key);
      this.contexts.set(key, cached);
      return Promise.resolve(cached);
    }
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    const signing = Promise.resolve().then(() => {
      const leaf = this.sign(key);
      this.pending.delete(key);
      this.contexts.set(key, leaf);
      if (this.contexts.size > this.capacity) {
        this.contexts.delete(this.contexts.keys().next().value as string);
      }
      return leaf;
    });
    this.pending.set(key, signing);
    return signing;
  }

  private sign(name: string): LeafContext {
    const cert = forge.pki.createCertificate();
    cert.publicKey = this.leafPublicKey;
    cert.serialNumber = certificateSerialNumber();
    const now = this.now();
    cert.validity.notBefore = new Date(now - 24 * 3600 * 1000); // tolerate skewed device clocks
    cert.validity.notAfter = new Date(now + LEAF_VALIDITY_MS);
    cert.setSubject([{ name: 'commonName', value: name.slice(0, 64) }]);
    cert.setIssuer(this.caCert.subject.attributes);
    const altName = isIP(name) ? { type: 7, ip: name } : { type: 2, value: name };
    cert.setExtensions([
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      // Browsers match names only against the SAN (RFC 6125 §6.4.4).
      { name: 'subjectAltName', altNames: [altName] },
      { name: 'subjectKeyIdentifier' },
      { name: 'authorityKeyIdentifier', keyIdentifier: this.caKeyId },
    ]);
    const caKey = this.caKey;
    // forge's cert.sign only calls key.sign(md) with the SHA-256 of the TBS certificate.
    const openSslSigner = {
      sign(md: forge.md.MessageDigest): string {
        const digest = Buffer.from(md.digest().getBytes(), 'binary');
        return privateEncrypt(
          { key: caKey, padding: constants.RSA_PKCS1_PADDING },
          Buffer.concat([SHA256_DIGEST_INFO, digest]),
        ).toString('binary');
      },
    };
    cert.sign(openSslSigner as unknown as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
    const certPem = forge.pki.certificateToPem(cert);
    this.issuedCount += 1;
    return {
      context: tls.createSecureContext({ key: this.leafKeyPem, cert: certPem }),
      certPem,
      keyPem: this.leafKeyPem,
      expiresAt: cert.validity.notAfter.getTime(),
    };
  }
}
