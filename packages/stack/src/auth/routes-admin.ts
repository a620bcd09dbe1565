// The admin API (service_role tokens only): users CRUD with GoTrue's pagination headers,
// generate_link and invite.
import bcrypt from 'bcryptjs';
import { Hono } from 'hono';
import { z } from 'zod';
import { resolveRedirect } from './auth-config.ts';
import type { AuthContext } from './auth-context.ts';
import { AuthError, authErrors } from './auth-error.ts';
import { assertEmailAvailable } from './email-change.ts';
import { discardEmailTokens, issueEmailToken, type TokenSlot } from './email-tokens.ts';
import type { MailKind } from './mailbox.ts';
import {
  assertPasswordStrength,
  emailSchema,
  mergeMetadata,
  metadataSchema,
  readBody,
  requireAdmin,
} from './request.ts';
import { BCRYPT_COST } from './routes-signin.ts';
import {
  findUserByEmail,
  findUserById,
  insertUser,
  loadUserJson,
  markEmailIdentityVerified,
  type UserRow,
  updateUserColumns,
} from './users.ts';

/** "none" lifts a ban; otherwise Go duration units as GoTrue parses them ("24h", "90m"). */
const banDurationSchema = z
  .string()
  .regex(/^(none|(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+)$/, 'invalid format for ban duration');

function banUntil(duration: string | undefined): Date | null | undefined {
  if (duration === undefined) return undefined;
  if (duration === 'none') return null;
  const unitMs: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    ms: 1,
    s: 1e3,
    m: 6e4,
    h: 3.6e6,
  };
  let total = 0;
  for (const [, amount, unit] of duration.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) {
    total += Number(amount) * (unitMs[unit as string] ?? 0);
  }
  return new Date(Date.now() + total);
}

const createSchema = z.object({
  id: z.uuid().optional(),
  email: emailSchema.optional(),
  phone: z.string().optional(),
  password: z.string().optional(),
  email_confirm: z.boolean().default(false),
  user_metadata: metadataSchema.optional(),
  app_metadata: metadataSchema.optional(),
  role: z.string().optional(),
  ban_duration: banDurationSchema.optional(),
});

const updateSchema = createSchema.omit({ id: true });

const generateLinkSchema = z.object({
  type: z.enum([
    'signup',
    'magiclink',
    'recovery',
    'invite',
    'email_change_current',
    'email_change_new',
  ]),
  email: emailSchema,
  new_email: emailSchema.optional(),
  password: z.string().optional(),
  data: metadataSchema.optional(),
  redirect_to: z.string().optional(),
});

const inviteSchema = z.object({ email: emailSchema, data: metadataSchema.optional() });

export function adminRoutes(context: AuthContext) {
  const app = new Hono();
  const { pool, config, mailbox } = context;

  app.use('/admin/*', async (c, next) => {
    await requireAdmin(c, context);
    await next();
  });
  app.use('/invite', async (c, next) => {
    await requireAdmin(c, context);
    await next();
  });

  async function loadUser(id: string): Promise<UserRow> {
    if (!z.uuid().safeParse(id).success) {
      throw new AuthError(404, 'validation_failed', 'user_id must be an UUID');
    }
    const user = await findUserById(pool, id);
    if (!user) throw authErrors.userNotFound();
    return user;
  }

  async function createUser(fields: {
    email: string;
    password?: string | undefined;
    confirmed: boolean;
    invited?: boolean;
    userMetadata?: Record<string, unknown> | undefined;
    appMetadata?: Record<string, unknown> | undefined;
    role?: string | undefined;
    id?: string | undefined;
    bannedUntil?: Date | null | undefined;
  }): Promise<UserRow> {
    // GoTrue's admin create trusts the operator: no password-strength check here.
    return insertUser(pool, {
      id: fields.id,
      email: fields.email,
      passwordHash: fields.password ? await bcrypt.hash(fields.password, BCRYPT_COST) : null,
      role: fields.role ?? 'authenticated',
      appMetadata: { provider: 'email', providers: ['email'], ...(fields.appMetadata ?? {}) },
      userMetadata: fields.userMetadata ?? {},
      emailConfirmed: fields.confirmed,
      invited: fields.invited,
      bannedUntil: fields.bannedUntil ?? null,
    });
  }

  app.get('/admin/users', async (c) => {
    const page = Math.max(1, Number.parseInt(c.req.query('page') ?? '1', 10) || 1);
    const perPage = Math.min(
      1000,
      Math.max(1, Number.parseInt(c.req.query('per_page') ?? '50', 10) || 50),
    );
    const total = await pool.query<{ count: string }>('select count(*) from auth.users');
    const { rows } = await pool.query<UserRow>(
      'select * from auth.users order by created_at desc, id limit $1 offset $2',
      [perPage, (page - 1) * perPage],
    );
    const users = await Promise.all(rows.map((user) => loadUserJson(pool, user)));
    const count = Number(total.rows[0]?.count ?? 0);
    // internal/api/pagination.go: rel="next" while more pages remain, always rel="last".
    const lastPage = Math.max(1, Math.ceil(count / perPage));
    const base = '/admin/users';
    const links: string[] = [];
    if (page < lastPage) links.push(`<${base}?page=${page + 1}&per_page=${perPage}>; rel="next"`);
    links.push(`<${base}?page=${lastPage}&per_page=${perPage}>; rel="last"`);
    c.header('X-Total-Count', String(count));
    c.header('Link', links.join(', '));
    return c.json({ aud: 'authenticated', users });
  });

  app.post('/admin/users', async (c) => {
    const body = await readBody(c, createSchema);
    if (!body.email)
      throw authErrors.validation('Unable to validate email address: invalid format');
    if (await findUserByEmail(pool, body.email)) throw authErrors.emailExists();
    const user = await createUser({
      id: body.id,
      email: body.email,
      password: body.password,
      confirmed: body.email_confirm,
      userMetadata: body.user_metadata,
      appMetadata: body.app_metadata,
      role: body.role,
      bannedUntil: banUntil(body.ban_duration),
    });
    return c.json(await loadUserJson(pool, user));
  });

  app.get('/admin/users/:id', async (c) => {
    return c.json(await loadUserJson(pool, await loadUser(c.req.param('id'))));
  });

  app.put('/admin/users/:id', async (c) => {
    let user = await loadUser(c.req.param('id'));
    const body = await readBody(c, updateSchema);
    const columns: Partial<Record<keyof UserRow, unknown>> = {};
    if (body.email && body.email !== user.email) {
      const taken = await findUserByEmail(pool, body.email);
      if (taken && taken.id !== user.id) throw authErrors.emailExists();
      columns.email = body.email;
    }
    if (body.password !== undefined) {
      assertPasswordStrength(context, body.password);
      columns.encrypted_password = await bcrypt.hash(body.password, BCRYPT_COST);
    }
    if (body.email_confirm && !user.email_confirmed_at) columns.email_confirmed_at = new Date();
    if (body.user_metadata)
      columns.raw_user_meta_data = mergeMetadata(user.raw_user_meta_data, body.user_metadata);
    if (body.app_metadata)
      columns.raw_app_meta_data = mergeMetadata(user.raw_app_meta_data, body.app_metadata);
    if (body.role) columns.role = body.role;
    const bannedUntil = banUntil(body.ban_duration);
    if (bannedUntil !== undefined) columns.banned_until = bannedUntil;
    if (Object.keys(columns).length > 0) user = await updateUserColumns(pool, user.id, columns);
    if (user.email && user.email_confirmed_at)
      await markEmailIdentityVerified(pool, user.id, user.email);
    // A ban ends the user's sessions at once, as GoTrue does.
    if (bannedUntil) await pool.query('delete from auth.sessions where user_id = $1', [user.id]);
    return c.json(await loadUserJson(pool, user));
  });

  app.delete('/admin/users/:id', async (c) => {
    const user = await loadUser(c.req.param('id'));
    const body = await readBody(c, z.object({ should_soft_delete: z.boolean().default(false) }));
    if (body.should_soft_delete) {
      await pool.query('delete from auth.sessions where user_id = $1', [user.id]);
      await updateUserColumns(pool, user.id, {
        deleted_at: new Date(),
        email: null,
        phone: null,
        encrypted_password: '',
      });
    } else {
      await pool.query('delete from auth.users where id = $1', [user.id]);
    }
    return c.json({});
  });

  app.post('/admin/generate_link', async (c) => {
    const body = await readBody(c, generateLinkSchema);
    const redirectTo = resolveRedirect(config, body.redirect_to ?? c.req.query('redirect_to'));
    let user = await findUserByEmail(pool, body.email);
    let kind: MailKind;
    let address = body.email;
    let slot: TokenSlot | undefined;
    switch (body.type) {
      case 'signup':
        if (user?.email_confirmed_at) throw authErrors.emailExists();
        if (!body.password) throw authErrors.validation('Signup requires a valid password');
        if (!user) {
          user = await createUser({
            email: body.email,
            password: body.password,
            confirmed: false,
            userMetadata: body.data,
          });
        }
        kind = 'signup';
        break;
      case 'magiclink':
        if (!user)
          user = await createUser({ email: body.email, confirmed: false, userMetadata: body.data });
        kind = 'magiclink';
        break;
      case 'recovery':
        if (!user) throw authErrors.userNotFound();
        kind = 'recovery';
        break;
      case 'invite':
        if (user?.email_confirmed_at) throw authErrors.emailExists();
        if (!user) {
          user = await createUser({
            email: body.email,
            confirmed: false,
            invited: true,
            userMetadata: body.data,
          });
        }
        kind = 'invite';
        break;
      default:
        // GoTrue: one link per call, for the current address (only with double_confirm_changes)
        // or the new one; the two links of one change are generated in turn.
        if (!user) throw authErrors.userNotFound();
        if (!body.new_email)
          throw authErrors.validation('The new email address provided is invalid');
        if (body.type === 'email_change_current' && !config.doubleConfirmEmailChanges) {
          throw authErrors.validation(
            'Enable secure email change to generate link for current email',
          );
        }
        await assertEmailAvailable(pool, body.new_email, user.id);
        // Another new address replaces the pending change: its tokens stop working.
        if (user.email_change !== body.new_email) {
          await discardEmailTokens(pool, user.id, ['email_change_new', 'email_change_current']);
        }
        user = await updateUserColumns(pool, user.id, {
          email_change: body.new_email,
          email_change_confirm_status: 0,
        });
        slot = body.type;
        address = body.type === 'email_change_current' ? body.email : body.new_email;
        kind = 'email_change';
    }
    // Always the implicit flow, as GoTrue's GenerateLink (api/mail.go): an admin link carries
    // no code challenge, so its token never gets the `pkce_` prefix.
    const token = await issueEmailToken(pool, context, user, kind, redirectTo, { address, slot });
    const fresh = (await findUserById(pool, user.id)) as UserRow;
    return c.json({
      ...(await loadUserJson(pool, fresh)),
      action_link: token.actionLink,
      email_otp: token.otp,
      hashed_token: token.hashedToken,
      verification_type: body.type,
      redirect_to: redirectTo,
    });
  });

  app.post('/invite', async (c) => {
    const body = await readBody(c, inviteSchema);
    let user = await findUserByEmail(pool, body.email);
    if (user?.email_confirmed_at) throw authErrors.emailExists();
    if (!user)
      user = await createUser({
        email: body.email,
        confirmed: false,
        invited: true,
        userMetadata: body.data,
      });
    const redirectTo = resolveRedirect(config, c.req.query('redirect_to'));
    const token = await issueEmailToken(pool, context, user, 'invite', redirectTo);
    mailbox.deliver(body.email, 'invite', token.otp, token.hashedToken, token.actionLink);
    return c.json(await loadUserJson(pool, (await findUserById(pool, user.id)) as UserRow));
  });

  return app;
}
