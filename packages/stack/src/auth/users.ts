// auth.users and auth.identities: reads, writes and the user JSON GoTrue returns
// (internal/models/user.go, identity.go). Queries take a pg client so callers can share a
// transaction.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';

export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

export interface UserRow {
  id: string;
  aud: string | null;
  role: string | null;
  email: string | null;
  encrypted_password: string | null;
  email_confirmed_at: Date | null;
  invited_at: Date | null;
  confirmation_token: string | null;
  confirmation_sent_at: Date | null;
  recovery_token: string | null;
  recovery_sent_at: Date | null;
  email_change_token_new: string | null;
  email_change_token_current: string | null;
  email_change: string | null;
  email_change_sent_at: Date | null;
  /** Secure e-mail change: 1 once one of the two addresses has confirmed, else 0. */
  email_change_confirm_status: number;
  last_sign_in_at: Date | null;
  raw_app_meta_data: Record<string, unknown> | null;
  raw_user_meta_data: Record<string, unknown> | null;
  created_at: Date | null;
  updated_at: Date | null;
  phone: string | null;
  phone_confirmed_at: Date | null;
  confirmed_at: Date | null;
  banned_until: Date | null;
  deleted_at: Date | null;
  is_anonymous: boolean;
}

export interface IdentityRow {
  id: string;
  provider_id: string;
  user_id: string;
  identity_data: Record<string, unknown>;
  provider: string;
  last_sign_in_at: Date | null;
  created_at: Date | null;
  updated_at: Date | null;
  email: string | null;
}

/** GoTrue normalises addresses to lower case before storing and comparing them. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function findUserById(db: Queryable, id: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>('select * from auth.users where id = $1', [id]);
  return rows[0];
}

export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(
    'select * from auth.users where lower(email) = $1 and is_sso_user = false',
    [normalizeEmail(email)],
  );
  return rows[0];
}

export async function findIdentities(db: Queryable, userId: string): Promise<IdentityRow[]> {
  const { rows } = await db.query<IdentityRow>(
    'select * from auth.identities where user_id = $1 order by created_at',
    [userId],
  );
  return rows;
}

export interface NewUser {
  id?: string;
  email: string | null;
  passwordHash: string | null;
  role: string;
  appMetadata: Record<string, unknown>;
  userMetadata: Record<string, unknown>;
  emailConfirmed: boolean;
  invited?: boolean;
  isAnonymous?: boolean;
  bannedUntil?: Date | null;
}

/** Inserts the user and, for an e-mail user, its `email` identity, as GoTrue's signup does. */
export async function insertUser(db: Queryable, user: NewUser): Promise<UserRow> {
  const id = user.id ?? randomUUID();
  const { rows } = await db.query<UserRow>(
    `insert into auth.users (
       instance_id, id, aud, role, email, encrypted_password, email_confirmed_at, invited_at,
       raw_app_meta_data, raw_user_meta_data, created_at, updated_at, is_anonymous, banned_until)
     values ('00000000-0000-0000-0000-000000000000', $1, 'authenticated', $2, $3, $4,
       case when $5 then now() end, case when $6 then now() end, $7, $8, now(), now(), $9, $10)
     returning *`,
    [
      id,
      user.role,
      user.email,
      user.passwordHash,
      user.emailConfirmed,
      user.invited ?? false,
      user.appMetadata,
      user.userMetadata,
      user.isAnonymous ?? false,
      user.bannedUntil ?? null,
    ],
  );
  if (user.email) {
    await db.query(
      `insert into auth.identities (provider_id, user_id, identity_data, provider, last_sign_in_at,
         created_at, updated_at)
       values ($1::text, $1::uuid, $2, 'email', now(), now(), now())`,
      [
        id,
        { sub: id, email: user.email, email_verified: user.emailConfirmed, phone_verified: false },
      ],
    );
  }
  return rows[0] as UserRow;
}

/** Updates the named columns (trusted names only) and bumps updated_at. */
export async function updateUserColumns(
  db: Queryable,
  id: string,
  columns: Partial<Record<keyof UserRow, unknown>>,
): Promise<UserRow> {
  const names = Object.keys(columns);
  const assignments = names.map((name, index) => `${name} = $${index + 2}`);
  const { rows } = await db.query<UserRow>(
    `update auth.users set ${[...assignments, 'updated_at = now()'].join(', ')}
     where id = $1 returning *`,
    [id, ...names.map((name) => columns[name as keyof UserRow])],
  );
  return rows[0] as UserRow;
}

/** Keeps the e-mail identity's `email_verified` in step with the user's confirmation. */
export async function markEmailIdentityVerified(db: Queryable, userId: string, email: string) {
  await db.query(
    `update auth.identities
       set identity_data = identity_data || jsonb_build_object('email', $2::text, 'email_verified', true),
           updated_at = now()
     where user_id = $1 and provider = 'email'`,
    [userId, email],
  );
}

/**
 * A confirmed address change: the e-mail identity takes the new address, verified; a user
 * without one (an anonymous user adding an address) gets one and `email` among its
 * `app_metadata.providers`, as GoTrue's emailChangeVerify and UpdateAppMetaDataProviders do.
 */
export async function recordChangedEmailIdentity(db: Queryable, userId: string, email: string) {
  await markEmailIdentityVerified(db, userId, email);
  const inserted = await db.query(
    `insert into auth.identities (provider_id, user_id, identity_data, provider, last_sign_in_at,
       created_at, updated_at)
     select $1::text, $1::uuid, $2, 'email', now(), now(), now()
     where not exists (select from auth.identities where user_id = $1::uuid and provider = 'email')`,
    [userId, { sub: userId, email, email_verified: true, phone_verified: false }],
  );
  if (inserted.rowCount === 0) return;
  await db.query(
    `update auth.users set raw_app_meta_data = coalesce(raw_app_meta_data, '{}'::jsonb)
       || jsonb_build_object(
            'provider', coalesce(raw_app_meta_data ->> 'provider', 'email'),
            'providers', (select jsonb_agg(distinct provider) from auth.identities
                          where user_id = $1))
     where id = $1`,
    [userId],
  );
}

const iso = (value: Date | null) => value?.toISOString();

function serializeIdentity(identity: IdentityRow) {
  return {
    identity_id: identity.id,
    id: identity.provider_id,
    user_id: identity.user_id,
    identity_data: identity.identity_data,
    provider: identity.provider,
    last_sign_in_at: iso(identity.last_sign_in_at),
    created_at: iso(identity.created_at),
    updated_at: iso(identity.updated_at),
    email: identity.email ?? undefined,
  };
}

/** GoTrue's user JSON: optional timestamps are omitted when unset (`omitempty`). */
export function serializeUser(user: UserRow, identities: IdentityRow[]) {
  return {
    id: user.id,
    aud: user.aud ?? '',
    role: user.role ?? '',
    email: user.email ?? '',
    email_confirmed_at: iso(user.email_confirmed_at),
    invited_at: iso(user.invited_at),
    phone: user.phone ?? '',
    phone_confirmed_at: iso(user.phone_confirmed_at),
    confirmation_sent_at: iso(user.confirmation_sent_at),
    confirmed_at: iso(user.confirmed_at),
    recovery_sent_at: iso(user.recovery_sent_at),
    new_email: user.email_change || undefined,
    email_change_sent_at: iso(user.email_change_sent_at),
    last_sign_in_at: iso(user.last_sign_in_at),
    app_metadata: user.raw_app_meta_data ?? {},
    user_metadata: user.raw_user_meta_data ?? {},
    identities: identities.map(serializeIdentity),
    created_at: iso(user.created_at),
    updated_at: iso(user.updated_at),
    banned_until: iso(user.banned_until),
    deleted_at: iso(user.deleted_at),
    is_anonymous: user.is_anonymous,
  };
}

export type UserJson = ReturnType<typeof serializeUser>;

export async function loadUserJson(db: Queryable, user: UserRow): Promise<UserJson> {
  return serializeUser(user, await findIdentities(db, user.id));
}
