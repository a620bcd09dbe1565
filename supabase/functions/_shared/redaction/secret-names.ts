// Which names hold secrets: header names, JSON keys, form and query fields, `name=value` pairs
// in text. A name is split into words (`X-Amz-Security-Token`, `accessToken`, `client_secret`
// → x amz security token, access token, client secret) and matched word by word, so `pin` is
// caught but `shipping` and `spinner` are not. On doubt a name counts as secret.
import type { RedactionKind } from './kinds.ts';

function words(list: string): Set<string> {
  return new Set(list.split(' '));
}

/** Last words that describe a secret rather than hold one (`token_type`, `expires_in`). */
const DESCRIPTIVE_LAST_WORDS = words(
  'age alg algorithm algorithms at brand changed count counts created date description ' +
    'details disabled domain duration enabled endpoint endpoints error errors exists exp ' +
    'expiration expire expires expiry field format hint httponly in kind label last4 len ' +
    'length lifetime limit location max maxage message method methods min mode name names ' +
    'path policies policy prefix present provider providers required reset rules samesite ' +
    'scheme schemes secure server servers set size state status storage strength suffix ' +
    'supported time timeout timestamp ttl type types updated uri uris url urls usage valid ' +
    'version',
);

/** Whole names (words joined) that look secret but are public by design. */
const PUBLIC_NAMES = words(
  'authority keyid kid publickey publickeys publishablekey tokentype',
);

/** Words that turn a following `key` into a credential (`api key`, `subscription key`). */
const KEY_QUALIFIERS = words(
  'access account admin api app application auth client consumer deploy developer ' +
    'encryption hmac ingest integration license master mobile partner private sdk secret ' +
    'security service session shared sign signing subscription webhook write',
);

/** Words that turn a following `code` into a one-time credential (`mfa_code`, `reset_code`). */
const CODE_QUALIFIERS = words(
  'activation auth backup confirmation invite login magic mfa otp recovery reset security ' +
    'sms totp verification verify',
);

const PASSWORD_WORDS = new Set(['pass', 'pw', 'pwd', 'pin', 'pincode', 'otp', 'totp', 'hotp']);
const CARD_WORDS = new Set(['cvv', 'cvv2', 'cvc', 'cvc2', 'cvn', 'pan']);
const TOKEN_WORDS = new Set(['jwt', 'bearer', 'csrf', 'xsrf', 'assertion', 'ticket']);

/** Splits a name into lowercase words: camelCase, snake_case, kebab-case, dots and brackets. */
export function splitName(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 0);
}

type Rule = (words: string[], compact: string) => boolean;

// First match wins: the most specific kinds come first.
const RULES: [RedactionKind, Rule][] = [
  ['private-key', (_, compact) => compact.includes('privatekey')],
  ['set-cookie', (_, compact) => compact === 'setcookie' || compact === 'setcookie2'],
  ['cookie', (words) => words.some((word) => /cookies?$/.test(word))],
  [
    'password',
    (words) =>
      words.some((word) => /pass(?:word|wd|phrase|code)/.test(word) || PASSWORD_WORDS.has(word)),
  ],
  [
    'card',
    (words, compact) =>
      /card(?:number|num|no)|ccnum|creditcard/.test(compact) ||
      words.some((word) => CARD_WORDS.has(word)),
  ],
  ['aws-secret-key', (_, compact) => compact.includes('secretaccesskey')],
  ['connection-string', (_, compact) => compact.includes('connectionstring')],
  [
    'secret',
    (words) =>
      words.some((word) =>
        (word.includes('secret') && !word.includes('secretar')) ||
        word.startsWith('credential') || word === 'verifier'
      ),
  ],
  [
    'api-key',
    (words, compact) =>
      compact.includes('apikey') ||
      words.some((word, index) => {
        if (word === 'key' || word === 'keys') return KEY_QUALIFIERS.has(words[index - 1] ?? '');
        const qualifier = /^([a-z]+)keys?$/.exec(word)?.[1];
        return qualifier !== undefined && KEY_QUALIFIERS.has(qualifier);
      }),
  ],
  [
    'token',
    (words) =>
      words.some((word, index) =>
        word.endsWith('token') || TOKEN_WORDS.has(word) ||
        (word === 'tokens' && words.length === 1) ||
        ((word === 'code' || word === 'codes') && CODE_QUALIFIERS.has(words[index - 1] ?? ''))
      ),
  ],
  [
    'authorization',
    (words) => words.some((word) => word.includes('authorization') || word === 'auth'),
  ],
  [
    'session',
    (words) =>
      words.some((word) =>
        word.startsWith('session') || word.endsWith('sessid') || word.endsWith('sessionid') ||
        word === 'sid'
      ),
  ],
  [
    'signature',
    (words) => words.some((word) => word.endsWith('signature') || word === 'sig'),
  ],
];

const cache = new Map<string, RedactionKind | null>();

/** The kind of secret a name holds, or undefined for a name that holds none. */
export function classifyName(name: string): RedactionKind | undefined {
  if (name.length === 0 || name.length > 100) return undefined;
  const cached = cache.get(name);
  if (cached !== undefined) return cached ?? undefined;
  const kind = classifyWords(splitName(name));
  if (cache.size > 5000) cache.clear();
  cache.set(name, kind ?? null);
  return kind;
}

function classifyWords(words: string[]): RedactionKind | undefined {
  const last = words.at(-1);
  if (last === undefined) return undefined;
  if (words.length > 1 && DESCRIPTIVE_LAST_WORDS.has(last)) return undefined;
  const compact = words.join('');
  if (PUBLIC_NAMES.has(compact)) return undefined;
  return RULES.find(([, rule]) => rule(words, compact))?.[0];
}

/**
 * Header names whose last word is `key` but that carry no credential: RFC 6455 §11.3.1's
 * handshake nonce, the idempotency key of draft-ietf-httpapi-idempotency-key-header, and
 * CDN cache keys and tags.
 */
const PUBLIC_KEY_HEADERS = words(
  'sec-websocket-key idempotency-key x-idempotency-key surrogate-key x-cache-key cache-key',
);

/**
 * The kind of secret a header holds: the name rule, and also any header whose name ends in
 * `-key` or `_key` (`X-Functions-Key`, `X-Mashape-Key`, `x_tenant_key`, or `-keys`), since
 * vendors put API keys under such headers with every qualifier (docs/redaction.md "Where
 * secrets are looked for"). Over-redaction is the safe failure; the public ones are listed.
 */
export function classifyHeaderName(name: string): RedactionKind | undefined {
  const kind = classifyName(name);
  if (kind || name.length > 100) return kind;
  const lower = name.trim().toLowerCase();
  if (!/[-_]keys?$/.test(lower) || PUBLIC_KEY_HEADERS.has(lower)) return undefined;
  // `X-Public-Key` holds public material, as in the name rule.
  return /(?:^|[-_])public[-_]keys?$/.test(lower) ? undefined : 'api-key';
}

/**
 * A member's kind, also read with the name of the object holding it: `card.number`,
 * `api.key`, `verification.code` (the member name alone says nothing).
 */
export function classifyMember(
  name: string,
  parent: string | undefined,
): RedactionKind | undefined {
  const kind = classifyName(name);
  if (kind || parent === undefined || !/^(?:number|num|no|pan|key|keys|code)$/i.test(name)) {
    return kind;
  }
  return classifyName(`${parent}_${name}`);
}

/** Counts such as `max_tokens` and `input_tokens` are numbers under token-like names. */
export function isCountName(name: string): boolean {
  return /tokens$/i.test(name);
}

/**
 * JSON Web Key private members (RFC 7518 §6.2.2, §6.3.2, §6.4.1) carry key material under
 * one-letter names; they count as secret when the value looks like base64url key material.
 */
export function isJwkPrivateMember(name: string, value: unknown): boolean {
  return /^(?:d|p|q|dp|dq|qi|k)$/.test(name) && typeof value === 'string' &&
    /^[A-Za-z0-9_-]{22,}$/.test(value);
}
