// The signed-in user's own routes: GET/PUT /user and POST /logout.
import bcrypt from 'bcryptjs';
import { Hono } from 'hono';
import { z } from 'zod';
import { resolveRedirect } from './auth-config.ts';
import type { AuthContext } from './auth-context.ts';
import { AuthError, authErrors } from './auth-error.ts';
import { assertEmailAvailable, requestEmailChange } from './email-change.ts';
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
import { loadUserJson, type UserRow, updateUserColumns } from './users.ts';

const updateSchema = z.object({
  email: emailSchema.optional(),
  password: z.string().optional(),
  data: metadataSchema.optional(),
  nonce: z.string().optional(),
  code_challenge: z.string().optional(),
  code_challenge_method: z.string().optional(),
});

export function userRoutes(context: AuthContext) {
  const app = new Hono();
  const { pool, config, defences } = context;

  app.get('/user', async (c) => {
    const { user } = await requireSignedInUser(c, context);
    return c.json(await loadUserJson(pool, user));
  });

  app.put('/user', async (c) => {
    // GoTrue: authentication first, then the `sign_in_sign_ups` limiter (api.go, User).
    const { user: current } = await requireSignedInUser(c, context);
    defences.requests.check('user', clientAddress(c));
    const body = await readBody(c, updateSchema);
    // Everything that can refuse the request is checked before anything is written.
    const newEmail = body.email !== undefined && body.email !== current.email ? body.email : null;
    if (newEmail) await assertEmailAvailable(pool, newEmail, current.id);
    let passwordHash: string | undefined;
    if (body.password !== undefined) {
      assertPasswordStrength(context, body.password);
      if (
        current.encrypted_password &&
        (await bcrypt.compare(body.password, current.encrypted_password))
      ) {
        throw new AuthError(
          422,
          'same_password',
          'New password should be different from the old password.',
        );
      }
      passwordHash = await bcrypt.hash(body.password, BCRYPT_COST);
    }
    let user: UserRow = current;
    // A session alone never moves the address: the change waits for confirmation from the new
    // address (and the current one with double_confirm_changes), autoconfirm or not; the answer
    // shows it pending as `new_email` (docs/local-stack.md "Address changes").
    if (newEmail) {
      const redirectTo = resolveRedirect(config, c.req.query('redirect_to'));
      user = await requestEmailChange(context, user.id, newEmail, redirectTo, body);
    }
    if (passwordHash) {
      user = await updateUserColumns(pool, user.id, { encrypted_password: passwordHash });
    }
    if (body.data) {
      user = await updateUserColumns(pool, user.id, {
        raw_user_meta_data: mergeMetadata(user.raw_user_meta_data, body.data),
      });
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
