// The Capture CA as an Apple configuration profile (.mobileconfig), the one-tap way to install a
// root on iOS, iPadOS and macOS. The profile is unsigned, so iOS shows it as "Not Verified"; that
// is what mitmproxy (mitm.it) and Charles serve too, and signing would need a key the user trusts.
import { createHash } from 'node:crypto';

export const MOBILECONFIG_CONTENT_TYPE = 'application/x-apple-aspen-config';

export type MobileconfigCa = { certDer: Buffer; fingerprint256: string };

export function caMobileconfig(
  ca: MobileconfigCa,
  options: { organization?: string } = {},
): string {
  const organization = options.organization ?? 'Capture';
  // Identifiers follow the CA, not the moment of download: installing the same CA's profile again
  // replaces the installed one, and a new CA gets a profile of its own.
  const fingerprint = ca.fingerprint256.replaceAll(':', '').toLowerCase();
  const identifier = `capture.ca.${fingerprint.slice(0, 16)}`;
  const rootPayload: PlistDict = {
    PayloadCertificateFileName: 'capture-ca.cer',
    PayloadContent: ca.certDer,
    PayloadDescription: 'Adds the Capture CA certificate.',
    PayloadDisplayName: 'Capture CA',
    PayloadIdentifier: `${identifier}.root`,
    PayloadType: 'com.apple.security.root',
    PayloadUUID: deriveUuid(fingerprint, 'root payload'),
    PayloadVersion: 1,
  };
  const profile: PlistDict = {
    PayloadContent: [rootPayload],
    PayloadDescription:
      `Trusts the Capture CA (SHA-256 ${ca.fingerprint256}) so the capture proxy can decrypt ` +
      "this device's HTTPS traffic.",
    PayloadDisplayName: 'Capture CA',
    PayloadIdentifier: identifier,
    PayloadOrganization: organization,
    PayloadRemovalDisallowed: false,
    PayloadType: 'Configuration',
    PayloadUUID: deriveUuid(fingerprint, 'profile'),
    PayloadVersion: 1,
  };
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" ' +
      '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    '<plist version="1.0">',
    serializePlist(profile, ''),
    '</plist>',
    '',
  ].join('\n');
}

/**
 * A UUID-formatted name for `label` of the CA with this fingerprint: the first 16 bytes of
 * SHA-256(fingerprint, label), marked as version 8 with the RFC 9562 variant (RFC 9562 §5.8:
 * custom UUIDs), upper-case as Apple's tools write them.
 */
function deriveUuid(fingerprint: string, label: string): string {
  const bytes = createHash('sha256').update(`${fingerprint}\n${label}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x80;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex').toUpperCase();
  return [
    hex.slice(0, 8),
    hex.slice(8, 12),
    hex.slice(12, 16),
    hex.slice(16, 20),
    hex.slice(20),
  ].join('-');
}

type PlistValue = string | number | boolean | Buffer | PlistValue[] | PlistDict;
type PlistDict = { [key: string]: PlistValue };

/** The XML property-list form of a value; integers only, as a profile holds no reals. */
function serializePlist(value: PlistValue, indent: string): string {
  const inner = `${indent}  `;
  if (typeof value === 'string') return `${indent}<string>${escapeXml(value)}</string>`;
  if (typeof value === 'number') return `${indent}<integer>${Math.trunc(value)}</integer>`;
  if (typeof value === 'boolean') return `${indent}<${value}/>`;
  if (Buffer.isBuffer(value)) return `${indent}<data>${value.toString('base64')}</data>`;
  if (Array.isArray(value)) {
    const items = value.map((item) => serializePlist(item, inner));
    return [`${indent}<array>`, ...items, `${indent}</array>`].join('\n');
  }
  const entries = Object.entries(value).flatMap(([key, item]) => [
    `${inner}<key>${escapeXml(key)}</key>`,
    serializePlist(item, inner),
  ]);
  return [`${indent}<dict>`, ...entries, `${indent}</dict>`].join('\n');
}

function escapeXml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&apos;');
}
