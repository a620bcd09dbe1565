// The role badge beside the signed-in account (001 §5 rule 2); admin roles look different,
// because granting an admin's access is the decision that matters most.
import type { ConsentRole } from '../consent-api.ts';

export function RoleBadge(props: { role: ConsentRole | null }) {
  const { role } = props;
  if (!role) {
    return (
      <span className="role-badge role-badge--none" data-testid="role-badge" data-role="">
        no role
      </span>
    );
  }
  return (
    <span
      className={role.is_admin ? 'role-badge role-badge--admin' : 'role-badge'}
      data-testid="role-badge"
      data-role={role.slug}
      data-admin={role.is_admin ? 'true' : 'false'}
      title={role.is_admin ? 'Administrator: every capability, every row' : undefined}
    >
      {role.name}
    </span>
  );
}
