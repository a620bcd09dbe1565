// What an account may do, from whoami() (001 §5.4): the parsed answer and the capability rule.
// Pure, so the shell, the pages and the unit tests share one definition.

export type Section =
  | 'devices'
  | 'entries'
  | 'settings'
  | 'services'
  | 'tags'
  | 'users'
  | 'stats'
  | 'status'
  | 'federation'
  | 'farm';

export type AccountAccess = {
  userId: string;
  email: string;
  isAdmin: boolean;
  roles: { slug: string; name: string; is_admin: boolean }[];
  capabilities: ReadonlySet<string>;
};

/** `edit` implies `view` (docs/data-model.md); an admin holds every capability. */
export function can(access: AccountAccess, section: Section, action: 'view' | 'edit' = 'view') {
  if (access.isAdmin) return true;
  if (access.capabilities.has(`${section}:${action}`)) return true;
  return action === 'view' && access.capabilities.has(`${section}:edit`);
}

/** Parses whoami's jsonb; anything unexpected is an error rather than a guess. */
export function parseWhoami(value: unknown): AccountAccess {
  const raw = value as Record<string, unknown> | null;
  if (!raw || typeof raw.user_id !== 'string') throw new Error('whoami answered no user');
  const capabilities = Array.isArray(raw.capabilities)
    ? raw.capabilities.filter((item): item is string => typeof item === 'string')
    : [];
  const roles = Array.isArray(raw.roles)
    ? (raw.roles as AccountAccess['roles']).filter(
        (role) => typeof role?.slug === 'string' && typeof role.name === 'string',
      )
    : [];
  return {
    userId: raw.user_id,
    email: typeof raw.email === 'string' ? raw.email : '',
    isAdmin: raw.is_admin === true,
    roles,
    capabilities: new Set(capabilities),
  };
}
