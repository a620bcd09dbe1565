// `/access`: the account's OAuth grants (connected applications, from the tool server's consent
// API) and API tokens, each revocable; for admins the roles with their capabilities and who holds
// them, federation partners, and the farm audit log. Sections a role may not read are absent.
import type { SupabaseClient } from '@supabase/supabase-js';
import { useState } from 'react';
import { useAccess } from '../access.tsx';
import { can } from '../access-rules.ts';
import { useAppServices } from '../app-context.tsx';
import { ConsoleShell } from '../console/console-shell.tsx';
import { useQuery } from '../console/use-query.ts';

type Grant = {
  id: string;
  client: { client_id: string; name: string | null; uri: string | null };
  scope: string;
  created_at: string;
  last_used_at: string;
};

async function sessionToken(supabase: SupabaseClient): Promise<string> {
  const { data } = await supabase.auth.getSession();
  if (!data.session) throw new Error('signed out');
  return data.session.access_token;
}

function GrantsSection() {
  const { supabase, config } = useAppServices();
  const [problem, setProblem] = useState<string | null>(null);
  const grants = useQuery(async () => {
    const response = await fetch(`${config.mcpUrl}/oauth/grants`, {
      headers: { authorization: `Bearer ${await sessionToken(supabase)}` },
      credentials: 'omit',
    });
    if (!response.ok) throw new Error(`the tool server answered ${response.status}`);
    return (await response.json()) as Grant[];
  }, [supabase, config.mcpUrl]);
  async function revoke(grant: Grant) {
    setProblem(null);
    const response = await fetch(`${config.mcpUrl}/oauth/grants/${encodeURIComponent(grant.id)}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${await sessionToken(supabase)}` },
      credentials: 'omit',
    });
    if (!response.ok && response.status !== 404)
      setProblem(`Revoking failed (${response.status}).`);
    grants.reload();
  }
  return (
    <section className="panel" data-testid="grants-section" aria-labelledby="grants-heading">
      <h2 id="grants-heading">Connected applications</h2>
      <p className="muted">
        Applications you allowed on the consent page. Revoking ends every token they hold.
      </p>
      {(grants.error || problem) && <p className="error">{grants.error ?? problem}</p>}
      {grants.data && grants.data.length === 0 && <p className="muted">None.</p>}
      <ul className="plain-list">
        {grants.data?.map((grant) => (
          <li
            key={grant.id}
            className="grant"
            data-testid="grant"
            data-client-id={grant.client.client_id}
          >
            <strong>{grant.client.name ?? grant.client.client_id}</strong>{' '}
            <span className="muted">
              scope {grant.scope} · since {new Date(grant.created_at).toLocaleString()} · last used{' '}
              {new Date(grant.last_used_at).toLocaleString()}
            </span>{' '}
            <button
              type="button"
              className="button--small button--secondary"
              onClick={() => revoke(grant)}
            >
              Revoke
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

type Token = {
  jti: string;
  label: string;
  client_id: string | null;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  user_id: string;
};

function TokensSection() {
  const { supabase } = useAppServices();
  const access = useAccess();
  const [problem, setProblem] = useState<string | null>(null);
  const tokens = useQuery(async () => {
    // Own tokens only, also for admins (who may read everyone's): this is "my access".
    const { data, error } = await supabase
      .from('api_tokens')
      .select('jti,label,client_id,created_at,expires_at,revoked_at,user_id')
      .eq('user_id', access.userId)
      .is('revoked_at', null)
      .gt('expires_at', new Date().toISOString())
      .order('created_at', { ascending: false })
      .limit(100);
    if (error) throw new Error(error.message);
    return (data ?? []) as Token[];
  }, [supabase, access.userId]);
  async function revoke(token: Token) {
    const { error } = await supabase
      .from('api_tokens')
      .update({ revoked_at: new Date().toISOString() })
      .eq('jti', token.jti);
    setProblem(error ? error.message : null);
    tokens.reload();
  }
  return (
    <section className="panel" data-testid="tokens-section" aria-labelledby="tokens-heading">
      <h2 id="tokens-heading">API tokens</h2>
      {(tokens.error || problem) && <p className="error">{tokens.error ?? problem}</p>}
      {tokens.data && tokens.data.length === 0 && <p className="muted">No live tokens.</p>}
      <div className="table-wrap">
        <table className="table">
          <tbody>
            {tokens.data?.map((token) => (
              <tr key={token.jti} data-testid="token" data-jti={token.jti}>
                <td>{token.label}</td>
                <td className="wide-only">{token.client_id ?? '–'}</td>
                <td>expires {new Date(token.expires_at).toLocaleString()}</td>
                <td>
                  <button
                    type="button"
                    className="button--small button--secondary"
                    onClick={() => revoke(token)}
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

type Role = {
  id: string;
  slug: string;
  name: string;
  is_admin: boolean;
  role_capabilities: { section: string; action: string }[];
  user_roles: { user_id: string }[];
};

function UsersSection() {
  const { supabase } = useAppServices();
  const roles = useQuery(async () => {
    const { data, error } = await supabase
      .from('roles')
      .select('id,slug,name,is_admin,role_capabilities(section,action),user_roles(user_id)')
      .order('slug');
    if (error) throw new Error(error.message);
    return (data ?? []) as Role[];
  }, [supabase]);
  return (
    <section className="panel" data-testid="admin-users-section" aria-labelledby="users-heading">
      <h2 id="users-heading">Roles and users</h2>
      {roles.error && <p className="error">{roles.error}</p>}
      <div className="table-wrap">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Role</th>
              <th scope="col">Capabilities</th>
              <th scope="col">Users</th>
            </tr>
          </thead>
          <tbody>
            {roles.data?.map((role) => (
              <tr key={role.id} data-role={role.slug}>
                <th scope="row">
                  {role.name}{' '}
                  {role.is_admin && <span className="role-badge role-badge--admin">admin</span>}
                </th>
                <td>
                  {role.is_admin
                    ? 'every capability'
                    : role.role_capabilities
                        .map((cap) => `${cap.section}:${cap.action}`)
                        .sort()
                        .join(', ') || 'none'}
                </td>
                <td>
                  <details>
                    <summary>{role.user_roles.length}</summary>
                    <ul>
                      {role.user_roles.map((holder) => (
                        <li key={holder.user_id}>
                          <code>{holder.user_id}</code>
                        </li>
                      ))}
                    </ul>
                  </details>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

type Partner = {
  client_id: string;
  client_name: string;
  verify_mode: string;
  capped_role: string;
  enabled: boolean;
};

function FederationSection() {
  const { supabase } = useAppServices();
  const partners = useQuery(async () => {
    const { data, error } = await supabase.rpc('list_federation_clients', { confirm: true });
    if (error) throw new Error(error.message);
    return (data ?? []) as Partner[];
  }, [supabase]);
  return (
    <section
      className="panel"
      data-testid="federation-section"
      aria-labelledby="federation-heading"
    >
      <h2 id="federation-heading">Federation partners</h2>
      {partners.error && <p className="error">{partners.error}</p>}
      {partners.data && partners.data.length === 0 && <p className="muted">No partners.</p>}
      <div className="table-wrap">
        <table className="table">
          <tbody>
            {partners.data?.map((partner) => (
              <tr key={partner.client_id}>
                <th scope="row">{partner.client_name}</th>
                <td>{partner.verify_mode}</td>
                <td>capped at {partner.capped_role}</td>
                <td>{partner.enabled ? 'enabled' : 'disabled'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

type AuditRow = {
  id: number;
  at: string;
  user_email: string | null;
  tool: string;
  event: string;
  client_id: string | null;
  duration_ms: number | null;
};

function FarmAuditSection() {
  const { supabase } = useAppServices();
  const audit = useQuery(async () => {
    const { data, error } = await supabase
      .from('farm_audit')
      .select('id,at,user_email,tool,event,client_id,duration_ms')
      .order('at', { ascending: false })
      .limit(100);
    if (error) throw new Error(error.message);
    return (data ?? []) as AuditRow[];
  }, [supabase]);
  return (
    <section className="panel" data-testid="farm-audit-section" aria-labelledby="farm-heading">
      <h2 id="farm-heading">Farm audit</h2>
      {audit.error && <p className="error">{audit.error}</p>}
      {audit.data && audit.data.length === 0 && <p className="muted">No farm calls yet.</p>}
      <div className="table-wrap">
        <table className="table">
          <tbody>
            {audit.data?.map((row) => (
              <tr key={row.id}>
                <td>{new Date(row.at).toLocaleString()}</td>
                <td>{row.user_email ?? '–'}</td>
                <td>{row.tool}</td>
                <td>{row.event}</td>
                <td className="wide-only">{row.duration_ms ?? '–'} ms</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function AccessSections() {
  const access = useAccess();
  return (
    <>
      <h1>Access</h1>
      <GrantsSection />
      <TokensSection />
      {access.isAdmin && can(access, 'users') && <UsersSection />}
      {access.isAdmin && can(access, 'federation', 'edit') && <FederationSection />}
      {access.isAdmin && can(access, 'farm') && <FarmAuditSection />}
    </>
  );
}

export function AccessPage() {
  return (
    <ConsoleShell>
      <AccessSections />
    </ConsoleShell>
  );
}
