// POST /signup and POST /token (grant types password, refresh_token, pkce).
import { randomUUID } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { Hono } from 'hono';
import { z } from 'zod';
import { resolveRedirect } from './auth-config.ts';
import type { AuthContext } from './auth-context.ts';
import { AuthError, authErrors } from './auth-error.ts';
import { issueEmailToken } from './email-tokens.ts';
import { redeemAuthCode, startFlowState } from './flow-state.ts';
import { assertPasswordStrength, emailSchema, metadataSchema, readBody } from './request.ts';
import { clientAddress } from './request-limits.ts';
import { continueSession, signIn } from './session-response.ts';
import { rotateRefreshToken } from './sessions.ts';
import {
  findUserByEmail,
  findUserById,
  insertUser,
  loadUserJson,
  markEmailIdentityVerified,
  normalizeEmail,
  serializeUser,
  type UserRow,
  updateUserColumns,
} from './users.ts';

/** bcrypt cost GoTrue uses (Go's bcrypt.DefaultCost). */
export const BCRYPT_COST = 10;

/**
 * A bcrypt hash (cost 10) of a random password nobody knows: a sign-in for an address without
 * an account, or without a password, compares against it, so it takes as long as a wrong
 * password for a real account and the time does not tell the two apart.
 */
const DUMMY_PASSWORD_HASH = '$2b$10$Y1w2xlqWhhaKAlZCZ39Y3eUyhyJmq8KEq94al1mp9QjhXStlgnzx2';

/**
 * GoTrue's sanitizeUser (internal/api/signup.go): with confirmations on, sign-up of an address
 * that already has a confirmed account answers with this made-up unconfirmed user (new id, no
 * identities) and sends nothing, so the answer looks like a first sign-up.
 */
function lookalikeUser(email: string, data: Record<string, unknown> | undefined) {
  const now = new Date();
  const user: UserRow = {
    id: randomUUID(),
    aud: 'authenticated',
    role: '',
    email,
    encrypted_password: null,
    email_confirmed_at: null,
    invited_at: null,
    confirmation_token: null,
    confirmation_sent_at: now,
    recovery_token: null,
    recovery_sent_at: null,
    email_change_token_new: null,
    email_change_token_current: null,
    email_change: null,
    email_change_sent_at: null,
    email_change_confirm_status: 0,
    last_sign_in_at: null,
    raw_app_meta_data: { provider: 'email', providers: ['email'] },
    raw_user_meta_data: data ?? {},
    created_at: now,
    updated_at: now,
    phone: null,
    phone_confirmed_at: null,
    confirmed_at: null,
    banned_until: null,
    deleted_at: null,
    is_anonymous: false,
  };
  return serializeUser(user, []);
}

const signupSchema = z.object({
  email: emailSchema.optional(),
  phone: z.string().optional(),
  password: z.string().optional(),
  data: metadataSchema.optional(),
  code_challenge: z.string().optional(),
  code_challenge_method: z.string().optional(),
});

const passwordGrantSchema = z.object({
  email: z.string().optional(),
  phone: z.string().optional(),
  password: z.string().default(''),
});

const refreshGrantSchema = z.object({ refresh_token: z.string().default('') });
const pkceGrantSchema = z.object({
  auth_code: z.string().default(''),
  code_verifier: z.string().default(''),
});

export function assertUsable(user: UserRow) {
  if (user.banned_until && user.banned_until.getTime() > Date.now()) {
    throw new AuthError(400, 'user_banned', 'User is banned');
  }
}

export function signinRoutes(context: AuthContext) {
  const app = new Hono();
  const { pool, config, defences } = context;

  app.post('/signup', async (c) => {
    const body = await readBody(c, signupSchema);
    const userAgent = c.req.header('User-Agent');
    const address = clientAddress(c);
    if (!body.email && !body.phone && !body.password) {
      // supabase-js signInAnonymously posts a body with neither address nor password.
      if (!config.anonymousSignInsEnabled) {
        throw new AuthError(422, 'anonymous_provider_disabled', 'Anonymous sign-ins are disabled');
      }
      defences.requests.check('anonymous', address);
      const user = await insertUser(pool, {
        email: null,
        passwordHash: null,
        role: 'authenticated',
        appMetadata: {},
        userMetadata: body.data ?? {},
        emailConfirmed: false,
        isAnonymous: true,
      });
      return c.json(await signIn(pool, context, user, 'anonymous', userAgent));
    }
    defences.requests.check('signup', address);
    if (!config.signupEnabled) {
      throw new AuthError(422, 'signup_disabled', 'Signups not allowed for this instance');
    }
    if (!body.email)
      throw new AuthError(400, 'phone_provider_disabled', 'Phone signups are disabled');
    if (!body.password) throw authErrors.validation('Signup requires a valid password');
    assertPasswordStrength(context, body.password);
    // Hashed for every request, used or not, so a used address takes as long as a new one.
    const passwordHash = await bcrypt.hash(body.password, BCRYPT_COST);
    const existing = await findUserByEmail(pool, body.email);
    if (existing?.email_confirmed_at) {
      // GoTrue (signup.go): without confirmations the caller would be signed in at once, so it
      // says so; with confirmations it answers as for a new address and mails nothing.
      if (config.autoconfirm) {
        throw new AuthError(422, 'user_already_exists', 'User already registered');
      }
      return c.json(lookalikeUser(body.email, body.data));
    }
    // An unconfirmed account is left as it is (GoTrue: "we can't be sure of their claimed
    // identity"): its password and metadata are not replaced by whoever signs up again.
    let user =
      existing ??
      (await insertUser(pool, {
        email: body.email,
        passwordHash,
        role: 'authenticated',
        appMetadata: { provider: 'email', providers: ['email'] },
        userMetadata: body.data ?? {},
        emailConfirmed: config.autoconfirm,
      }));
    if (config.autoconfirm && !user.email_confirmed_at) {
      user = await updateUserColumns(pool, user.id, { email_confirmed_at: new Date() });
      await markEmailIdentityVerified(pool, user.id, body.email);
    }
    if (config.autoconfirm) return c.json(await signIn(pool, context, user, 'password', userAgent));
    const redirectTo = resolveRedirect(config, c.req.query('redirect_to'));
    const flow = await startFlowState(pool, user.id, 'email/signup', body);
    const token = await issueEmailToken(pool, context, user, 'signup', redirectTo, {
      rateLimited: true,
      flow,
    });
    context.mailbox.deliver(body.email, 'signup', token.otp, token.hashedToken, token.actionLink);
    const refreshed = (await findUserById(pool, user.id)) as UserRow;
    return c.json(await loadUserJson(pool, refreshed));
  });

  app.post('/token', async (c) => {
    const grantType = c.req.query('grant_type');
    const userAgent = c.req.header('User-Agent');
    if (grantType === 'password' || grantType === 'refresh_token' || grantType === 'pkce') {
      defences.requests.check('token', clientAddress(c));
    }
    if (grantType === 'password') {
      const body = await readBody(c, passwordGrantSchema);
      if (!body.email) throw authErrors.invalidCredentials();
      const email = normalizeEmail(body.email);
      const address = clientAddress(c);
      defences.passwords.begin(email, address);
      const user = await findUserByEmail(pool, email);
      const stored = user?.encrypted_password || undefined;
      const matches = await bcrypt.compare(body.password, stored ?? DUMMY_PASSWORD_HASH);
      if (!user || !stored || !matches || user.deleted_at) throw authErrors.invalidCredentials();
      defences.passwords.succeeded(email, address);
      if (!user.email_confirmed_at)
        throw new AuthError(400, 'email_not_confirmed', 'Email not confirmed');
      assertUsable(user);
      return c.json(await signIn(pool, context, user, 'password', userAgent));
    }
    if (grantType === 'refresh_token') {
      const body = await readBody(c, refreshGrantSchema);
      if (!body.refresh_token) throw authErrors.validation('refresh_token required');
      const rotation = await rotateRefreshToken(
        pool,
        body.refresh_token,
        config.refreshTokenReuseIntervalSeconds,
      );
      const user = await findUserById(pool, rotation.userId);
      if (!user || user.deleted_at) throw authErrors.userNotFound();
      assertUsable(user);
      return c.json(
        await continueSession(pool, context, user, rotation.sessionId, rotation.refreshToken),
      );
    }
    if (grantType === 'pkce') {
      const body = await readBody(c, pkceGrantSchema);
      if (!body.auth_code || !body.code_verifier) {
        throw authErrors.validation(
          'invalid request: both auth code and code verifier should be non-empty',
        );
      }
      const flow = await redeemAuthCode(pool, body.auth_code, body.code_verifier);
      const user = await findUserById(pool, flow.userId);
      if (!user) throw authErrors.userNotFound();
      assertUsable(user);
      return c.json(await signIn(pool, context, user, flow.method, userAgent));
    }
    throw new AuthError(400, 'validation_failed', 'unsupported_grant_type');
  });

  return app;
}
