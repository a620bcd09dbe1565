// E-mail one-time tokens: an OTP the user can type and, in the link, its hash. Only the hash is
// stored (in the user's token column and in auth.one_time_tokens, as GoTrue keeps both), with
// GoTrue's `pkce_` prefix when the flow is PKCE.
import { randomUUID } from 'node:crypto';
import type { AuthContext } from './auth-context.ts';
import { AuthError, authErrors } from './auth-error.ts';
import { generateOtp, hashEmailOtp } from './crypto.ts';
import { type FlowType, PKCE_PREFIX } from './flow-state.ts';
import type { MailKind } from './mailbox.ts';
import type { Queryable, UserRow } from './users.ts';

/**
 * Where each kind of token lives, and the column holding the address its code is typed with.
 * GoTrue reuses the recovery token for magic links. An address change has a token for the new
 * address and, with `double_confirm_changes`, one for the current address; both expire with
 * `email_change_sent_at` (api/mail.go sendEmailChange).
 */
const SLOTS = {
  confirmation: {
    column: 'confirmation_token',
    sentAt: 'confirmation_sent_at',
    type: 'confirmation_token',
    addressColumn: 'email',
  },
  recovery: {
    column: 'recovery_token',
    sentAt: 'recovery_sent_at',
    type: 'recovery_token',
    addressColumn: 'email',
  },
  email_change_new: {
    column: 'email_change_token_new',
    sentAt: 'email_change_sent_at',
    type: 'email_change_token_new',
    addressColumn: 'email_change',
  },
  email_change_current: {
    column: 'email_change_token_current',
    sentAt: 'email_change_sent_at',
    type: 'email_change_token_current',
    addressColumn: 'email',
  },
} as const;

export type TokenSlot = keyof typeof SLOTS;

export function slotFor(kind: MailKind, user: UserRow): TokenSlot {
  if (kind === 'signup' || kind === 'invite') return 'confirmation';
  if (kind === 'email_change') return 'email_change_new';
  // A magic link to an unconfirmed user doubles as the confirmation (GoTrue's MagicLink).
  if (kind === 'magiclink' && !user.email_confirmed_at) return 'confirmation';
  return 'recovery';
}

export function isEmailChangeSlot(slot: TokenSlot): boolean {
  return slot === 'email_change_new' || slot === 'email_change_current';
}

/** 000-style verification types accepted by /verify, and the slots each may match. */
export const VERIFY_SLOTS: Record<string, TokenSlot[]> = {
  signup: ['confirmation'],
  invite: ['confirmation'],
  magiclink: ['recovery', 'confirmation'],
  recovery: ['recovery'],
  email: ['confirmation', 'recovery'],
  // GoTrue's verifyUserAndToken: a code or link for either address of the change.
  email_change: ['email_change_new', 'email_change_current'],
};

export interface IssuedEmailToken {
  otp: string;
  /** The token as stored and as the link carries it: the hash, `pkce_`-prefixed in a PKCE flow. */
  hashedToken: string;
  actionLink: string;
  verificationType: MailKind;
}

/** GoTrue refuses to send to the same user again within `max_frequency` (429). */
export function assertSendAllowed(context: AuthContext, user: UserRow, slot: TokenSlot) {
  const sentAt = user[SLOTS[slot].sentAt];
  if (!sentAt) return;
  const elapsed = (Date.now() - sentAt.getTime()) / 1000;
  const wait = Math.ceil(context.config.emailMaxFrequencySeconds - elapsed);
  if (wait > 0) throw authErrors.overEmailSendRateLimit(wait);
}

export async function issueEmailToken(
  db: Queryable,
  context: AuthContext,
  user: UserRow,
  kind: MailKind,
  redirectTo: string,
  options: {
    address?: string | undefined;
    rateLimited?: boolean;
    slot?: TokenSlot;
    /** PKCE (a code challenge was sent): the token gets GoTrue's `pkce_` prefix. */
    flow?: FlowType;
  } = {},
): Promise<IssuedEmailToken> {
  const slot = options.slot ?? slotFor(kind, user);
  if (options.rateLimited) assertSendAllowed(context, user, slot);
  const address = options.address ?? user.email ?? '';
  const otp = generateOtp(context.config.otpLength);
  // GoTrue's addFlowPrefixToToken (api/pkce.go): stored, mailed as the link's token and as the
  // template's TokenHash, all with the prefix.
  const prefix = options.flow === 'pkce' ? PKCE_PREFIX : '';
  const hashedToken = prefix + hashEmailOtp(context.config.jwtSecret, address, otp);
  const { column, sentAt, type } = SLOTS[slot];
  await db.query(
    `update auth.users set ${column} = $2, ${sentAt} = now(), updated_at = now() where id = $1`,
    [user.id, hashedToken],
  );
  await db.query(
    `insert into auth.one_time_tokens (id, user_id, token_type, token_hash, relates_to)
     values ($1, $2, $3, $4, $5)
     on conflict (user_id, token_type) do update
       set token_hash = excluded.token_hash, relates_to = excluded.relates_to, updated_at = now()`,
    [randomUUID(), user.id, type, hashedToken, address],
  );
  context.defences.codes.reset(address.toLowerCase());
  const link = new URL(`${context.config.externalUrl}/verify`);
  link.searchParams.set('token', hashedToken);
  link.searchParams.set('type', kind);
  link.searchParams.set('redirect_to', redirectTo);
  return { otp, hashedToken, actionLink: link.toString(), verificationType: kind };
}

const linkExpired = () => new AuthError(403, 'otp_expired', 'Email link is invalid or has expired');

export interface VerificationMatch {
  user: UserRow;
  slot: TokenSlot;
  hash: string;
}

/**
 * Finds the user whose stored token matches: by `token_hash` exactly as stored (so a PKCE token
 * only with its `pkce_` prefix, an implicit one only without), or by the address and the typed OTP
 * hashed the same way, which matches either (GoTrue's isOtpValid: `"pkce_"+actual == expected`).
 * Expired and unknown tokens answer alike (403 otp_expired). `hash` is the token as stored.
 */
export async function matchEmailToken(
  db: Queryable,
  context: AuthContext,
  type: string,
  params: { tokenHash?: string; email?: string; otp?: string },
): Promise<VerificationMatch> {
  const slots = VERIFY_SLOTS[type];
  if (!type) throw authErrors.validation('Verify requires a verification type');
  if (!slots) throw authErrors.validation('Invalid email verification type');
  // GoTrue words the two failures differently: "Email link is invalid or has expired" for a
  // token hash, "Token has expired or is invalid" for a typed code.
  const failure = params.tokenHash ? linkExpired : authErrors.otpExpired;
  for (const slot of slots) {
    const { column, sentAt, addressColumn } = SLOTS[slot];
    const hash =
      params.tokenHash ??
      (params.email && params.otp
        ? hashEmailOtp(context.config.jwtSecret, params.email.toLowerCase(), params.otp)
        : undefined);
    if (!hash) continue;
    const typed = !params.tokenHash;
    const { rows } = await db.query<UserRow>(
      `select * from auth.users
       where (${column} = $1 or ($3::boolean and ${column} = $4::text || $1)) and ${column} <> ''
         and ($2::text is null or lower(${addressColumn}) = lower($2))`,
      [hash, typed ? (params.email ?? null) : null, typed, PKCE_PREFIX],
    );
    const user = rows[0];
    if (!user) continue;
    const sent = user[sentAt];
    if (!sent || Date.now() - sent.getTime() > context.config.otpExpirySeconds * 1000)
      throw failure();
    return { user, slot, hash: user[column] ?? hash };
  }
  throw failure();
}

/** Single use: the token is cleared as it is accepted; of two racing verifications one wins. */
export async function consumeEmailToken(db: Queryable, match: VerificationMatch) {
  const { column, type } = SLOTS[match.slot];
  const cleared = await db.query(
    `update auth.users set ${column} = '' where id = $1 and ${column} = $2`,
    [match.user.id, match.hash],
  );
  if (cleared.rowCount !== 1) throw authErrors.otpExpired();
  await db.query('delete from auth.one_time_tokens where user_id = $1 and token_type = $2', [
    match.user.id,
    type,
  ]);
}

/** Voids the user's outstanding tokens in these slots (a request that replaces them). */
export async function discardEmailTokens(db: Queryable, userId: string, slots: TokenSlot[]) {
  const assignments = slots.map((slot) => `${SLOTS[slot].column} = ''`).join(', ');
  await db.query(`update auth.users set ${assignments} where id = $1`, [userId]);
  await db.query(
    'delete from auth.one_time_tokens where user_id = $1 and token_type = any($2::auth.one_time_token_type[])',
    [userId, slots.map((slot) => SLOTS[slot].type)],
  );
}

/**
 * Burns every outstanding e-mail code typed for `email` (confirmation and recovery codes of the
 * user with that address, the current-address code of that user's pending address change, and
 * the new-address code of a change to it): after too many wrong guesses even the right code is
 * refused until a new one is requested.
 */
export async function burnEmailTokens(db: Queryable, email: string) {
  const address = email.toLowerCase();
  await db.query(
    `with burned as (
       update auth.users set
         confirmation_token = case when lower(email) = $1 then '' else confirmation_token end,
         recovery_token = case when lower(email) = $1 then '' else recovery_token end,
         email_change_token_current =
           case when lower(email) = $1 then '' else email_change_token_current end,
         email_change_token_new =
           case when lower(email_change) = $1 then '' else email_change_token_new end
       where lower(email) = $1 or lower(email_change) = $1
       returning id)
     delete from auth.one_time_tokens
     where user_id in (select id from burned) and lower(relates_to) = $1`,
    [address],
  );
}
