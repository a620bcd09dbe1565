// The role badge's data on the home page: the signed-in user's roles read over REST. RLS on
// `roles` needs users:view, so a user without it gets no rows and the page shows no badge.
import type { SupabaseClient } from '@supabase/supabase-js';
import type { ConsentRole } from './consent-api.ts';

/** The role to show for rows of `user_roles.select('roles(slug,name,is_admin)')`: admin first. */
export function pickDisplayRole(rows: unknown): ConsentRole | null {
  if (!Array.isArray(rows)) return null;
  const roles = rows
    .flatMap((row) => {
      const embedded = (row as { roles?: unknown } | null)?.roles;
      // A to-one embed is an object; tolerate an array too.
      return Array.isArray(embedded) ? embedded : [embedded];
    })
    .filter(
      (role): role is ConsentRole =>
        typeof role === 'object' &&
        role !== null &&
        typeof role.slug === 'string' &&
        typeof role.name === 'string' &&
        typeof role.is_admin === 'boolean',
    );
  return roles.find((role) => role.is_admin) ?? roles[0] ?? null;
}

export async function fetchDisplayRole(
  supabase: SupabaseClient,
  userId: string,
): Promise<ConsentRole | null> {
  const { data, error } = await supabase
    .from('user_roles')
    .select('roles(slug,name,is_admin)')
    .eq('user_id', userId);
  // The badge is decoration: a failed read shows no badge rather than an error page.
  if (error) return null;
  return pickDisplayRole(data);
}
