// Secrets recognised by their own format wherever they appear: PEM private keys, JWTs, vendor
// keys with fixed prefixes (GitHub, GitLab, Stripe, Slack, Google, OpenAI, Anthropic,
// Supabase, npm, SendGrid, Hugging Face), AWS access key ids and the secret keys beside them.
import type { RedactionKind } from './kinds.ts';
import { type Context, type Edit, secretEdit } from './plan.ts';

interface TokenFormat {
  readonly kind: RedactionKind;
  /** Global, with a left guard so a match starts a token (linear scanning, no false middles). */
  readonly pattern: RegExp;
  /** An extra check on the match, for prefixes that also begin ordinary words. */
  readonly accept?: (match: string) => boolean;
}

const START = String.raw`(?<![A-Za-z0-9])`;

function format(kind: RedactionKind, source: string, accept?: (match: string) => boolean) {
  return { kind, pattern: new RegExp(START + source, 'g'), accept };
}

/** Random keys mix letter cases and digits; CSS names and slugs such as `sk-main-menu` do not. */
function looksRandom(match: string): boolean {
  return /[0-9]/.test(match) && /[A-Z]/.test(match) && /[a-z]/.test(match);
}

const SEGMENT = '[A-Za-z0-9_-]*';
// RFC 7515 §7.1 compact JWS (three base64url segments, the header `{"` = eyJ) and RFC 7516 §7.1
// compact JWE (five).
const JWT_SOURCE = `eyJ[A-Za-z0-9_-]{8,}\\.${SEGMENT}\\.${SEGMENT}(?:\\.${SEGMENT}\\.${SEGMENT})?`;

// Order matters only for equal spans: the first format listed names the kind.
const TOKEN_FORMATS: TokenFormat[] = [
  format('anthropic-key', String.raw`sk-ant-[a-z]{2,10}\d{0,4}-[A-Za-z0-9_-]{20,}`),
  format('openai-key', String.raw`sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`, looksRandom),
  format('github-token', String.raw`gh[pousr]_[A-Za-z0-9]{36,251}`),
  format('github-token', String.raw`github_pat_[A-Za-z0-9_]{22,255}`),
  format('gitlab-token', String.raw`gl(?:pat|dt|ptt|rt|cbt|oas)-[A-Za-z0-9_-]{20,}`),
  format('stripe-key', String.raw`(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}`),
  format('stripe-key', String.raw`whsec_[A-Za-z0-9+/=]{20,}`),
  format('slack-token', String.raw`xox[abeoprs]-[A-Za-z0-9-]{10,}`),
  format('slack-token', String.raw`xapp-\d-[A-Za-z0-9-]{10,}`),
  // A Slack incoming-webhook URL is itself the credential: its path is redacted, the host kept.
  format(
    'slack-token',
    String.raw`(?<=hooks\.slack\.com/services/)T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+`,
  ),
  format('google-api-key', String.raw`AIza[0-9A-Za-z_-]{35}`),
  format('token', String.raw`ya29\.[0-9A-Za-z_-]{20,}`),
  format('secret', String.raw`GOCSPX-[A-Za-z0-9_-]{20,}`),
  format('supabase-key', String.raw`sb_secret_[A-Za-z0-9_-]{20,}`),
  format('supabase-key', String.raw`sbp_[a-f0-9]{40}`),
  format('npm-token', String.raw`npm_[A-Za-z0-9]{36}`),
  format('api-key', String.raw`SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}`),
  format('api-key', String.raw`hf_[A-Za-z0-9]{30,}`, looksRandom),
  format(
    'aws-key',
    String.raw`(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}`,
  ),
  format('jwt', JWT_SOURCE),
];

/** Something every format above (and a PEM block) contains: texts without it are skipped. */
const ANY_FORMAT = new RegExp(
  [
    'eyJ',
    'gh[pousr]_',
    'github_pat_',
    'gl[a-z]{2,3}-',
    'sk-',
    '[sr]k_(?:live|test)_',
    'whsec_',
    'xox',
    'xapp-',
    'hooks\\.slack\\.com',
    'AIza',
    'ya29\\.',
    'GOCSPX-',
    'sb_secret_',
    'sbp_',
    'npm_',
    'SG\\.',
    'hf_',
    'A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|PKA)',
    '-----BEGIN ',
  ].join('|'),
  'g',
);

/** Publishable keys are public by design (shipped in every page and app): they stay visible. */
const PUBLISHABLE = /^(?:sb_publishable_[A-Za-z0-9_-]+|pk_(?:live|test)_[A-Za-z0-9]+)$/;

export function isPublishableKey(value: string): boolean {
  return PUBLISHABLE.test(value);
}

/** The kind of a value that is, as a whole, one secret of a known format. */
export function detectFormat(value: string): RedactionKind | undefined {
  const text = value.trim();
  if (text.startsWith('-----BEGIN ')) return pemKind(text);
  if (text.length < 20 || text.length > 65536) return undefined;
  for (const { kind, pattern, accept } of TOKEN_FORMATS) {
    pattern.lastIndex = 0;
    const match = pattern.exec(text);
    if (
      match && match.index === 0 && match[0].length === text.length && (accept?.(match[0]) ?? true)
    ) {
      return kind;
    }
  }
  return undefined;
}

function pemKind(text: string): RedactionKind | undefined {
  return /^-----BEGIN [A-Z0-9 ]*PRIVATE KEY/.test(text) ? 'private-key' : undefined;
}

/** Adds an edit for every format-recognised secret in `text[from, to)`. */
export function findFormatEdits(
  text: string,
  from: number,
  to: number,
  context: Context,
  edits: Edit[],
): void {
  ANY_FORMAT.lastIndex = from;
  const hint = ANY_FORMAT.exec(text);
  if (!hint || hint.index >= to) return;
  findPrivateKeyBlocks(text, from, to, context, edits);
  const awsKeys: [number, number][] = [];
  for (const { kind, pattern, accept } of TOKEN_FORMATS) {
    pattern.lastIndex = from;
    for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
      const end = match.index + match[0].length;
      if (end > to) break;
      if (accept?.(match[0]) ?? true) {
        edits.push(secretEdit(context, match.index, end, kind, match[0]));
        if (kind === 'aws-key') awsKeys.push([match.index, end]);
      }
    }
  }
  let searched = from;
  for (const [start, end] of awsKeys) {
    // Windows of neighbouring key ids overlap: each part of the text is searched about once.
    const windowStart = Math.max(from, start - 300, searched - 41);
    const windowEnd = Math.min(to, end + 300);
    if (windowEnd > windowStart) findAwsSecrets(text, windowStart, windowEnd, context, edits);
    searched = Math.max(searched, windowEnd);
  }
}

const PEM_BEGIN = /-----BEGIN ([A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?)-----/g;
// The body of a PEM block that lost its END line (a truncated body): base64 lines and headers.
const PEM_BODY = /[A-Za-z0-9+/=\s\\:,.-]*/y;

function findPrivateKeyBlocks(
  text: string,
  from: number,
  to: number,
  context: Context,
  edits: Edit[],
): void {
  const nextEnd = new Map<string, number>();
  PEM_BEGIN.lastIndex = from;
  for (let match = PEM_BEGIN.exec(text); match && match.index < to; match = PEM_BEGIN.exec(text)) {
    const label = match[1] ?? '';
    const endLine = `-----END ${label}-----`;
    // One search per label: the blocks are visited in order, so a found END serves the next.
    let endAt = nextEnd.get(label);
    if (endAt === undefined || (endAt !== -1 && endAt < match.index)) {
      endAt = text.indexOf(endLine, match.index);
      nextEnd.set(label, endAt);
    }
    let end: number;
    if (endAt !== -1 && endAt + endLine.length <= to) {
      end = endAt + endLine.length;
    } else {
      PEM_BODY.lastIndex = match.index + match[0].length;
      PEM_BODY.exec(text);
      end = Math.min(PEM_BODY.lastIndex, to);
    }
    edits.push(secretEdit(context, match.index, end, 'private-key', text.slice(match.index, end)));
    PEM_BEGIN.lastIndex = end;
  }
}

const AWS_SECRET = /(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g;

/** An AWS secret access key is 40 base64 characters; near an access key id it is taken as one. */
function findAwsSecrets(
  text: string,
  windowStart: number,
  windowEnd: number,
  context: Context,
  edits: Edit[],
): void {
  // The window is cut out so each search stays within it (linear in the text overall).
  const window = text.slice(windowStart, windowEnd);
  AWS_SECRET.lastIndex = 0;
  for (let match = AWS_SECRET.exec(window); match; match = AWS_SECRET.exec(window)) {
    if (/[A-Z]/.test(match[0]) && /[a-z]/.test(match[0])) {
      const secretStart = windowStart + match.index;
      edits.push(
        secretEdit(context, secretStart, secretStart + 40, 'aws-secret-key', match[0]),
      );
    }
  }
}
