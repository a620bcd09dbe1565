// Carries out an AccountChoice through the Auth admin API (so it works on hosted Supabase Auth)
// and binds (client_id, partner sub) to the account; provisioned accounts are clamped to the
// client's capped_role in the same RPC (000 §4.5 rule 4).
import { syntheticEmail } from '../_shared/federation/email-normalization.ts';
import type { AccountChoice } from './account-choice.ts';
import { logEvent } from './log.ts';
import { type SupabaseApi, SupabaseApiError } from './supabase-api.ts';

export interface HandoffSubject {
  clientId: string;
  partnerSub: string;
  cappedRole: string;
}

export interface SettledAccount {
  userId: string;
  email: string;
}

type BoundIdentity =
  | { refused: false; user_id: string; email: string; provisioned: boolean }
  /** A link the database refused when it was made (000 §4.5 rule 3, checked under a lock). */
  | { refused: true };

async function createAccount(
  api: SupabaseApi,
  subject: HandoffSubject,
  email: string,
): Promise<string | undefined> {
  try {
    const user = await api.auth<{ id: string }>(
      '/admin/users',
      'POST',
      {
        email,
        // The partner vouched for the address (000 §4.5); synthetic ones are undeliverable.
        email_confirm: true,
        // app_metadata is not user-editable, and rides along in every access token, refreshes too.
        app_metadata: {
          federation: { login_source: subject.clientId, capped_role: subject.cappedRole },
        },
      },
      true,
    );
    return user.id;
  } catch (error) {
    // The address was taken since the facts were read: fall back to rule 2.
    if (error instanceof SupabaseApiError && error.status === 422) return undefined;
    throw error;
  }
}

function bind(
  api: SupabaseApi,
  subject: HandoffSubject,
  userId: string,
  provisioned: boolean,
): Promise<BoundIdentity> {
  return api.rpc<BoundIdentity>('federation_broker_bind_identity', {
    client_id: subject.clientId,
    partner_sub: subject.partnerSub,
    user_id: userId,
    provisioned,
  });
}

async function provision(
  api: SupabaseApi,
  subject: HandoffSubject,
  email: string | undefined,
): Promise<SettledAccount> {
  const userId = (email ? await createAccount(api, subject, email) : undefined) ??
    (await createAccount(
      api,
      subject,
      syntheticEmail(subject.clientId, crypto.randomUUID().replaceAll('-', '')),
    ));
  if (!userId) throw new Error('synthetic address collided');
  let bound: BoundIdentity;
  try {
    bound = await bind(api, subject, userId, true);
    if (bound.refused) throw new Error('a provisioned binding was refused');
  } catch (error) {
    // An account nobody can reach must not stay behind; the next hand-off provisions afresh.
    await api.auth(`/admin/users/${userId}`, 'DELETE', {}, true).catch(() => undefined);
    throw error;
  }
  if (bound.user_id !== userId) {
    // A concurrent first hand-off of the same partner user won; drop the spare account.
    await api.auth(`/admin/users/${userId}`, 'DELETE', {}, true);
  }
  logEvent('account_provisioned', { client_id: subject.clientId, synthetic: !email });
  return { userId: bound.user_id, email: bound.email };
}

export async function settleAccount(
  api: SupabaseApi,
  subject: HandoffSubject,
  choice: AccountChoice,
): Promise<SettledAccount> {
  switch (choice.kind) {
    case 'mapped':
      return { userId: choice.userId, email: choice.email };
    case 'provision':
      return provision(api, subject, choice.email);
    case 'provision_synthetic':
      return provision(api, subject, undefined);
    case 'link': {
      const bound = await bind(api, subject, choice.userId, false);
      // The account stopped being linkable since the facts were read (another partner linked
      // it, it became an admin): rule 2, a fresh account, never the existing one.
      if (bound.refused) return provision(api, subject, undefined);
      logEvent('account_linked', { client_id: subject.clientId });
      return { userId: bound.user_id, email: bound.email };
    }
  }
}
