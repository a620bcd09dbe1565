// Secure address change, as GoTrue's sendEmailChange (api/mail.go) and emailChangeVerify
// (api/verify.go): the address moves only once the new address has confirmed and, with
// `double_confirm_changes`, the current one too, in either order. A user's own change waits
// even under autoconfirm, where GoTrue's does not (docs/local-stack.md "Address changes").
import type pg from 'pg';
import type { AuthContext } from './auth-context.ts';
import { authErrors } from './auth-error.ts';
import {
  assertSendAllowed,
  consumeEmailToken,
  discardEmailTokens,
  type IssuedEmailToken,
  issueEmailToken,
  type VerificationMatch,
} from './email-tokens.ts';
import { type PkceRequest, startFlowState } from './flow-state.ts';
import {
  findUserByEmail,
  findUserById,
  type Queryable,
  recordChangedEmailIdentity,
  type UserRow,
  updateUserColumns,
} from './users.ts';

/** GoTrue's answer to the first of two confirmations (api/verify.go), verbatim. */
export const SINGLE_CONFIRMATION_ACCEPTED =
  'Confirmation link accepted. Please proceed to confirm link sent to the other email';

/** `email_change_confirm_status`: 0 while neither address has confirmed, then 1 (GoTrue's). */
const NO_ADDRESS_CONFIRMED = 0;
const ONE_ADDRESS_CONFIRMED = 1;

/** `changed: false`: one address has confirmed, the change waits for the other. */
export type EmailChangeOutcome = { changed: true; user: UserRow } | { changed: false };

/** 422 email_exists when another user has the address (GoTrue's IsDuplicatedEmail). */
export async function assertEmailAvailable(db: Queryable, email: string, userId: string) {
  const taken = await findUserByEmail(db, email);
  if (taken && taken.id !== userId) throw authErrors.emailExists();
}

/** Runs `work` in one transaction holding the user's row, so changes to it are serialised. */
async function withLockedUser<T>(
  pool: pg.Pool,
  userId: string,
  work: (client: pg.PoolClient, user: UserRow) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const { rows } = await client.query<UserRow>(
      'select * from auth.users where id = $1 for update',
      [userId],
    );
    if (!rows[0]) throw authErrors.userNotFound();
    const result = await work(client, rows[0]);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback');
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Starts a change of the user's address to `newEmail`, replacing any pending one (its tokens
 * stop working): a link and code to the new address and, with `double_confirm_changes`, to the
 * current one. `max_frequency` applies (429), as to every mail a user can ask for. With a code
 * challenge the change is a PKCE flow (GoTrue's UserUpdate): both tokens get the `pkce_` prefix
 * and the last link followed redirects with `?code=`.
 */
export async function requestEmailChange(
  context: AuthContext,
  userId: string,
  newEmail: string,
  redirectTo: string,
  pkce: PkceRequest = {},
): Promise<UserRow> {
  const outbox: { to: string; token: IssuedEmailToken }[] = [];
  const user = await withLockedUser(context.pool, userId, async (client, current) => {
    assertSendAllowed(context, current, 'email_change_new');
    const flow = await startFlowState(client, userId, 'email_change', pkce);
    const pending = await updateUserColumns(client, userId, {
      email_change: newEmail,
      email_change_confirm_status: NO_ADDRESS_CONFIRMED,
    });
    const issue = async (address: string, slot: 'email_change_new' | 'email_change_current') => {
      const token = await issueEmailToken(client, context, pending, 'email_change', redirectTo, {
        address,
        slot,
        flow,
      });
      outbox.push({ to: address, token });
    };
    await issue(newEmail, 'email_change_new');
    // An anonymous user has no current address to ask (GoTrue: `user.GetEmail() != ""`).
    if (context.config.doubleConfirmEmailChanges && current.email) {
      await issue(current.email, 'email_change_current');
    } else {
      await discardEmailTokens(client, userId, ['email_change_current']);
    }
    return (await findUserById(client, userId)) as UserRow;
  });
  for (const { to, token } of outbox) {
    context.mailbox.deliver(to, 'email_change', token.otp, token.hashedToken, token.actionLink);
  }
  return user;
}

/**
 * Consumes a verified address-change token. With `double_confirm_changes` the first of the two
 * only records that one address has confirmed; the last one moves the address: the e-mail
 * identity follows, and every outstanding token of the user (links sent to the old address
 * included) is voided, as GoTrue's ConfirmEmailChange clears the user's one-time tokens.
 */
export async function confirmEmailChange(
  context: AuthContext,
  match: VerificationMatch,
): Promise<EmailChangeOutcome> {
  return withLockedUser(context.pool, match.user.id, async (client, user) => {
    await consumeEmailToken(client, match);
    const bothAddresses = context.config.doubleConfirmEmailChanges && Boolean(user.email);
    if (bothAddresses && user.email_change_confirm_status === NO_ADDRESS_CONFIRMED) {
      await updateUserColumns(client, user.id, {
        email_change_confirm_status: ONE_ADDRESS_CONFIRMED,
      });
      return { changed: false };
    }
    const newEmail = user.email_change;
    // Every token is issued with its pending address; without one the account keeps its own.
    if (!newEmail) throw authErrors.otpExpired();
    // The address may have been taken since the change was asked for.
    await assertEmailAvailable(client, newEmail, user.id);
    await client.query('delete from auth.one_time_tokens where user_id = $1', [user.id]);
    await updateUserColumns(client, user.id, {
      email: newEmail,
      email_change: '',
      email_change_token_new: '',
      email_change_token_current: '',
      email_change_confirm_status: NO_ADDRESS_CONFIRMED,
      confirmation_token: '',
      recovery_token: '',
      email_confirmed_at: user.email_confirmed_at ?? new Date(),
      is_anonymous: false,
    });
    await recordChangedEmailIdentity(client, user.id, newEmail);
    return { changed: true, user: (await findUserById(client, user.id)) as UserRow };
  });
}
