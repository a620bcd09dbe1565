// E-mail flows: POST /otp (magic link and code), POST /recover, POST /resend, and /verify,
// which accepts a typed code or a token hash (POST) or a followed link (GET, redirect).
import { Hono } from 'hono';
import { z } from 'zod';
import { resolveRedirect } from './auth-config.ts';
import type { AuthContext } from './auth-context.ts';
import { AuthError, authErrors } from './auth-error.ts';
import {
  confirmEmailChange,
  requestEmailChange,
  SINGLE_CONFIRMATION_ACCEPTED,
} from './email-change.ts';
import {
  burnEmailTokens,
  consumeEmailToken,
  isEmailChangeSlot,
  issueEmailToken,
  matchEmailToken,
  type VerificationMatch,
} from './email-tokens.ts';
import {
  authenticationMethodFor,
  type FlowType,
  findFlowState,
  flowStateNotFound,
  issueAuthCode,
  PKCE_PREFIX,
  startFlowState,
} from './flow-state.ts';
import type { MailKind } from './mailbox.ts';
import { emailSchema, metadataSchema, readBody } from './request.ts';
import { clientAddress } from './request-limits.ts';
import { signIn } from './session-response.ts';
import {
  findUserByEmail,
  insertUser,
  markEmailIdentityVerified,
  type UserRow,
  updateUserColumns,
} from './users.ts';

const otpSchema = z.object({
  email: emailSchema.optional(),
  phone: z.string().optional(),
  create_user: z.boolean().default(true),
  data: metadataSchema.optional(),
  code_challenge: z.string().optional(),
  code_challenge_method: z.string().optional(),
});

const recoverSchema = z.object({
  email: emailSchema,
  code_challenge: z.string().optional(),
  code_challenge_method: z.string().optional(),
});

const resendSchema = z.object({
  type: z.enum(['signup', 'email_change']),
  email: emailSchema,
  code_challenge: z.string().optional(),
  code_challenge_method: z.string().optional(),
});

const verifySchema = z.object({
  type: z.string().default(''),
  token: z.string().optional(),
  token_hash: z.string().optional(),
  email: z.string().optional(),
  redirect_to: z.string().optional(),
});

/** GoTrue's oauthErrorMap (api/errors.go): the OAuth `error` a redirected refusal carries. */
const OAUTH_ERRORS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized_client',
  403: 'access_denied',
  500: 'server_error',
  503: 'temporarily_unavailable',
};

/** The `amr` method recorded for a session that starts from a verification. */
const AMR_BY_TYPE: Record<string, string> = {
  signup: 'otp',
  email: 'otp',
  magiclink: 'magiclink',
  invite: 'invite',
  recovery: 'recovery',
  email_change: 'email_change',
};

/**
 * Consumes the verified token and applies what it proves (a confirmation, or an address change);
 * null while an address change still waits for the confirmation from its other address.
 */
async function applyVerification(
  context: AuthContext,
  match: VerificationMatch,
): Promise<UserRow | null> {
  if (isEmailChangeSlot(match.slot)) {
    const outcome = await confirmEmailChange(context, match);
    return outcome.changed ? outcome.user : null;
  }
  const { pool } = context;
  await consumeEmailToken(pool, match);
  let user = match.user;
  if (!user.email_confirmed_at) {
    user = await updateUserColumns(pool, user.id, { email_confirmed_at: new Date() });
  }
  if (user.email) await markEmailIdentityVerified(pool, user.id, user.email);
  return user;
}

function appendFragment(base: string, values: Record<string, string>): string {
  const url = new URL(base);
  url.hash = new URLSearchParams(values).toString();
  return url.toString();
}

/**
 * A redirect carrying `values` in the fragment and, for a PKCE flow, in the query as well, where
 * a server-side callback can read them (GoTrue's prepErrorRedirectURL and prepRedirectURL).
 */
function redirectWith(base: string, values: Record<string, string>, flow: FlowType): string {
  const url = new URL(appendFragment(base, { ...values, sb: '' }));
  if (flow === 'pkce') {
    for (const [name, value] of Object.entries(values)) url.searchParams.set(name, value);
  }
  return url.toString();
}

export function emailRoutes(context: AuthContext) {
  const app = new Hono();
  const { pool, config, mailbox, defences } = context;

  /**
   * Matches a verification; a wrong typed code counts against the address it was typed for
   * (its own bucket first), and burns that address's code after too many (code-guard.ts).
   */
  async function matchGuarded(
    type: string,
    params: { tokenHash?: string; email?: string; otp?: string },
  ): Promise<VerificationMatch> {
    const typedFor = params.otp && params.email ? params.email.trim().toLowerCase() : undefined;
    if (!typedFor) return matchEmailToken(pool, context, type, params);
    defences.codes.admit(typedFor);
    // Tries used up: the code is burned (or is being burned by the try that used the last one).
    if (!defences.codes.startTry(typedFor)) throw authErrors.otpExpired();
    try {
      const match = await matchEmailToken(pool, context, type, params);
      defences.codes.reset(typedFor);
      return match;
    } catch (error) {
      if (error instanceof AuthError && error.errorCode === 'otp_expired') {
        if (defences.codes.wasLastTry(typedFor)) await burnEmailTokens(pool, typedFor);
      } else {
        defences.codes.giveBack(typedFor);
      }
      throw error;
    }
  }

  async function send(user: UserRow, kind: MailKind, redirectTo: string, flow: FlowType) {
    const token = await issueEmailToken(pool, context, user, kind, redirectTo, {
      rateLimited: true,
      flow,
    });
    mailbox.deliver(user.email ?? '', kind, token.otp, token.hashedToken, token.actionLink);
  }

  app.post('/otp', async (c) => {
    defences.requests.check('otp', clientAddress(c));
    const body = await readBody(c, otpSchema);
    if (!body.email)
      throw new AuthError(400, 'phone_provider_disabled', 'Phone logins are disabled');
    let user = await findUserByEmail(pool, body.email);
    if (!user) {
      // GoTrue answers 422 otp_disabled here, which tells a known address from an unknown one;
      // this service answers as for a known address and sends nothing (as /recover does),
      // including the 429 a known address gets when it asks again within max_frequency.
      if (!body.create_user || !config.signupEnabled) {
        defences.unknownAddresses.ask(body.email);
        return c.json({});
      }
      user = await insertUser(pool, {
        email: body.email,
        passwordHash: null,
        role: 'authenticated',
        appMetadata: { provider: 'email', providers: ['email'] },
        userMetadata: body.data ?? {},
        emailConfirmed: false,
      });
    }
    const flow = await startFlowState(pool, user.id, 'magiclink', body);
    await send(user, 'magiclink', resolveRedirect(config, c.req.query('redirect_to')), flow);
    return c.json({});
  });

  app.post('/recover', async (c) => {
    defences.requests.check('recover', clientAddress(c));
    const body = await readBody(c, recoverSchema);
    const user = await findUserByEmail(pool, body.email);
    // An unknown address answers the same as a known one, a second ask within max_frequency
    // included: no account enumeration.
    if (user) {
      const flow = await startFlowState(pool, user.id, 'recovery', body);
      await send(user, 'recovery', resolveRedirect(config, c.req.query('redirect_to')), flow);
    } else {
      defences.unknownAddresses.ask(body.email);
    }
    return c.json({});
  });

  app.post('/resend', async (c) => {
    defences.requests.check('resend', clientAddress(c));
    const body = await readBody(c, resendSchema);
    const user = await findUserByEmail(pool, body.email);
    const redirectTo = resolveRedirect(config, c.req.query('redirect_to'));
    // GoTrue's Resend: a code challenge makes the new mail's flow PKCE, as on the first send.
    if (user && body.type === 'signup' && !user.email_confirmed_at) {
      const flow = await startFlowState(pool, user.id, 'email/signup', body);
      await send(user, 'signup', redirectTo, flow);
    }
    // The pending change is asked for again, both addresses mailed anew.
    if (user && body.type === 'email_change' && user.email_change) {
      await requestEmailChange(context, user.id, user.email_change, redirectTo, body);
    }
    return c.json({});
  });

  app.post('/verify', async (c) => {
    defences.requests.check('verify', clientAddress(c));
    const body = await readBody(c, verifySchema);
    if (!body.type) throw authErrors.validation('Verify requires a verification type');
    if (Boolean(body.token_hash) === Boolean(body.token)) {
      throw authErrors.validation('Verify requires either a token or a token hash');
    }
    if (body.token && !body.email) {
      throw authErrors.validation(
        'Only an email address or phone number should be provided on verify',
      );
    }
    const match = await matchGuarded(body.type, {
      tokenHash: body.token_hash,
      email: body.email,
      otp: body.token,
    });
    const user = await applyVerification(context, match);
    // GoTrue answers the first of two address confirmations with a message and no session.
    if (!user) return c.json({ msg: SINGLE_CONFIRMATION_ACCEPTED, code: '200' });
    const amr = AMR_BY_TYPE[body.type] ?? 'otp';
    return c.json(await signIn(pool, context, user, amr, c.req.header('User-Agent')));
  });

  // A followed e-mail link (GoTrue's verifyGet): a `pkce_` token belongs to a PKCE flow and
  // redirects with `?code=` (the flow's auth code, for POST /token?grant_type=pkce); any other
  // token redirects with the session in the fragment. The first of two address-change
  // confirmations redirects with GoTrue's `message`; a refusal with the error. A PKCE flow gets
  // both in the query as well as the fragment.
  app.get('/verify', async (c) => {
    defences.requests.check('verify', clientAddress(c));
    const type = c.req.query('type') ?? '';
    const token = c.req.query('token') ?? '';
    if (!type) throw authErrors.validation('Verify requires a verification type');
    if (!token) throw authErrors.validation('Verify requires a token or a token hash');
    const flow: FlowType = token.startsWith(PKCE_PREFIX) ? 'pkce' : 'implicit';
    const method = authenticationMethodFor(type);
    if (flow === 'pkce' && !method) throw authErrors.validation('Unsupported verification type');
    const redirectTo = resolveRedirect(config, c.req.query('redirect_to'));
    try {
      const match = await matchEmailToken(pool, context, type, { tokenHash: token });
      // GoTrue verifies and hands out the code in one transaction, so a link with no flow to
      // hand a code to is refused unspent; here that is checked before the token is spent.
      const flowStateId =
        flow === 'pkce' ? await findFlowState(pool, match.user.id, method as string) : undefined;
      if (flow === 'pkce' && !flowStateId) throw flowStateNotFound();
      const user = await applyVerification(context, match);
      if (!user) {
        return c.redirect(
          redirectWith(redirectTo, { message: SINGLE_CONFIRMATION_ACCEPTED }, flow),
          303,
        );
      }
      if (flowStateId) {
        const url = new URL(redirectTo);
        url.searchParams.set('code', await issueAuthCode(pool, flowStateId));
        return c.redirect(url.toString(), 303);
      }
      const amr = AMR_BY_TYPE[type] ?? 'otp';
      const session = await signIn(pool, context, user, amr, c.req.header('User-Agent'));
      return c.redirect(
        appendFragment(redirectTo, {
          access_token: session.access_token,
          expires_at: String(session.expires_at),
          expires_in: String(session.expires_in),
          refresh_token: session.refresh_token,
          sb: '',
          token_type: 'bearer',
          type,
        }),
        303,
      );
    } catch (error) {
      if (!(error instanceof AuthError)) throw error;
      const values: Record<string, string> = {
        error_code: error.errorCode,
        // A link lost to a racing use reads as any spent link; other refusals say what they are
        // (an address taken while its change was pending: email_exists).
        error_description:
          error.errorCode === 'otp_expired'
            ? 'Email link is invalid or has expired'
            : error.message,
      };
      // GoTrue's oauthErrorMap: `error` names the OAuth error of the refusal's status.
      const oauthError = OAUTH_ERRORS[error.status];
      return c.redirect(
        redirectWith(redirectTo, oauthError ? { error: oauthError, ...values } : values, flow),
        303,
      );
    }
  });

  return app;
}
