// POST /signup and POST /token (grant types password, refresh_token, pkce).
import bcrypt from 'bcryptjs';
import { Hono } from 'hono';
import { z } from 'zod';
import { resolveRedirect } from './auth-config.ts';
import type { AuthContext } from './auth-context.ts';
import { AuthError, authErrors } from './auth-error.ts';
import { issueEmailToken } from './email-tokens.ts';
import { redeemAuthCode, startFlowState } from './flow-state.ts';
import { assertPasswordStrength, emailSchema, metadataSchema, readBody } from './request.ts';
import { continueSession, signIn } from './session-response.ts';
import { rotateRefreshToken } from './sessions.ts';
import {
  findUserByEmail,
  findUserById,
  insertUser,
  loadUserJson,
  type UserRow,
  updateUserColumns,
} from './users.ts';

/** bcrypt cost GoTrue uses (Go's bcrypt.DefaultCost). */
export const BCRYPT_COST = 10;

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
  const { pool, config } = context;

  app.post('/signup', async (c) => {
    const body = await readBody(c, signupSchema);
    const userAgent = c.req.header('User-Agent');
    if (!body.email && !body.phone && !body.password) {
      // supabase-js signInAnonymously posts a body with neither address nor password.
      if (!config.anonymousSignInsEnabled) {
        throw new AuthError(422, 'anonymous_provider_disabled', 'Anonymous sign-ins are disabled');
      }
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
    if (!config.signupEnabled) {
      throw new AuthError(422, 'signup_disabled', 'Signups not allowed for this instance');
    }
    if (!body.email)
      throw new AuthError(400, 'phone_provider_disabled', 'Phone signups are disabled');
    if (!body.password) throw authErrors.validation('Signup requires a valid password');
    assertPasswordStrength(context, body.password);
    const passwordHash = await bcrypt.hash(body.password, BCRYPT_COST);
    let user = await findUserByEmail(pool, body.email);
    if (user?.email_confirmed_at) {
      throw new AuthError(422, 'user_already_exists', 'User already registered');
    }
    if (user) {
      user = await updateUserColumns(pool, user.id, {
        encrypted_password: passwordHash,
        raw_user_meta_data: body.data ?? user.raw_user_meta_data ?? {},
      });
    } else {
      user = await insertUser(pool, {
        email: body.email,
        passwordHash,
        role: 'authenticated',
        appMetadata: { provider: 'email', providers: ['email'] },
        userMetadata: body.data ?? {},
        emailConfirmed: config.autoconfirm,
      });
    }
    if (config.autoconfirm) return c.json(await signIn(pool, context, user, 'password', userAgent));
    const redirectTo = resolveRedirect(config, c.req.query('redirect_to'));
    await startFlowState(pool, user.id, 'email/signup', body);
    const token = await issueEmailToken(pool, context, user, 'signup', redirectTo, {
      rateLimited: true,
    });
    context.mailbox.deliver(body.email, 'signup', token.otp, token.hashedToken, token.actionLink);
    const refreshed = (await findUserById(pool, user.id)) as UserRow;
    return c.json(await loadUserJson(pool, refreshed));
  });

  app.post('/token', async (c) => {
    const grantType = c.req.query('grant_type');
    const userAgent = c.req.header('User-Agent');
    if (grantType === 'password') {
      const body = await readBody(c, passwordGrantSchema);
      if (!body.email) throw authErrors.invalidCredentials();
      const user = await findUserByEmail(pool, body.email);
      const matches =
        user?.encrypted_password && (await bcrypt.compare(body.password, user.encrypted_password));
      if (!user || !matches || user.deleted_at) throw authErrors.invalidCredentials();
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
