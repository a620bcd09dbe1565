// The signed-in user's own routes: GET/PUT /user and POST /logout.
import bcrypt from 'bcryptjs';
import { Hono } from 'hono';
import { z } from 'zod';
import { resolveRedirect } from './auth-config.ts';
import type { AuthContext } from './auth-context.ts';
import { AuthError, authErrors } from './auth-error.ts';
import { issueEmailToken } from './email-tokens.ts';
import {
  assertPasswordStrength,
  emailSchema,
  mergeMetadata,
  metadataSchema,
  readBody,
  requireSignedInUser,
} from './request.ts';
import { clientAddress } from './request-limits.ts';
import { BCRYPT_COST } from './routes-signin.ts';
import { endSessions, type LogoutScope } from './sessions.ts';
import {
  findUserByEmail,
  loadUserJson,
  markEmailIdentityVerified,
  type UserRow,
  updateUserColumns,
} from './users.ts';

const updateSchema = z.object({
  email: emailSchema.optional(),
  password: z.string().optional(),
  data: metadataSchema.optional(),
  nonce: z.string().optional(),
});

export function userRoutes(context: AuthContext) {
  const app = new Hono();
  const { pool, config, mailbox, defences } = context;

  app.get('/user', async (c) => {
    const { user } = await requireSignedInUser(c, context);
    return c.json(await loadUserJson(pool, user));
  });

  app.put('/user', async (c) => {
    // GoTrue: authentication first, then the `sign_in_sign_ups` limiter (api.go, User).
    const { user: current } = await requireSignedInUser(c, context);
    defences.requests.check('user', clientAddress(c));
    const body = await readBody(c, updateSchema);
    let user: UserRow = current;
    if (body.password !== undefined) {
      assertPasswordStrength(context, body.password);
      if (
        user.encrypted_password &&
        (await bcrypt.compare(body.password, user.encrypted_password))
      ) {
        throw new AuthError(
          422,
          'same_password',
          'New password should be different from the old password.',
        );
      }
      user = await updateUserColumns(pool, user.id, {
        encrypted_password: await bcrypt.hash(body.password, BCRYPT_COST),
      });
    }
    if (body.data) {
      user = await updateUserColumns(pool, user.id, {
        raw_user_meta_data: mergeMetadata(user.raw_user_meta_data, body.data),
      });
    }
    if (body.email && body.email !== user.email) {
      const taken = await findUserByEmail(pool, body.email);
      if (taken && taken.id !== user.id) {
        throw new AuthError(
          422,
          'email_exists',
          'A user with this email address has already been registered',
        );
      }
      if (config.autoconfirm) {
        user = await updateUserColumns(pool, user.id, {
          email: body.email,
          email_confirmed_at: new Date(),
        });
        await markEmailIdentityVerified(pool, user.id, body.email);
      } else {
        user = await updateUserColumns(pool, user.id, { email_change: body.email });
        const redirectTo = resolveRedirect(config, c.req.query('redirect_to'));
        const token = await issueEmailToken(pool, context, user, 'email_change', redirectTo, {
          address: body.email,
          rateLimited: true,
        });
        mailbox.deliver(body.email, 'email_change', token.otp, token.hashedToken, token.actionLink);
      }
    }
    return c.json(await loadUserJson(pool, user));
  });

  app.post('/logout', async (c) => {
    const { user, sessionId } = await requireSignedInUser(c, context);
    const scope = (c.req.query('scope') ?? 'global') as LogoutScope;
    if (!['global', 'local', 'others'].includes(scope)) {
      throw authErrors.validation(`Unsupported logout scope "${scope}"`);
    }
    await endSessions(pool, user.id, sessionId, scope);
    return c.body(null, 204);
  });

  return app;
}
