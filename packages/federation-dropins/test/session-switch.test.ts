// The companion side on a real auth server with real supabase-js clients: the hand-off session
// replaces the active account in place (000 §1 UX contract) once the person confirmed the switch,
// the replaced session is revoked; a switch to a different user is never silent (login CSRF,
// docs/federation.md "Login CSRF in the companion app"): without the confirm step it ends as
// confirmation_required with the minted session revoked, and a declined hand-off leaves the active
// account alone too. The session /exchange would return is minted by a password sign-in here;
// broker-e2e.test.ts gets it from the real broker.
import type { AuthChangeEvent, SupabaseClient } from '@supabase/supabase-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completeHandoff,
  type HandoffArrival,
  type HandoffSession,
  handOffToCompanion,
  installHandoffSession,
} from '../src/index.ts';
import { type StandInBroker, startStandInBroker } from './helpers/stand-in-broker.ts';
import { appClient, signUpUser, useThrowawayStack } from './helpers/throwaway-stack.ts';

const stack = useThrowawayStack();

/** A new real session for a user, as /exchange would return it (000 §2.5). */
async function mintSession(user: { email: string; password: string }): Promise<HandoffSession> {
  const { data, error } = await appClient(stack()).auth.signInWithPassword(user);
  if (error || !data.session) throw new Error(`sign-in failed: ${error?.message}`);
  return {
    access_token: data.session.access_token,
    refresh_token: data.session.refresh_token,
    expires_in: data.session.expires_in,
    user_id: data.session.user.id,
    email: data.session.user.email as string,
    login_source: 'svc_partner_app',
  };
}

/** Whether the server still honours a refresh token (a revoked session's does not). */
async function refreshWorks(refresh_token: string): Promise<boolean> {
  const { error } = await appClient(stack()).auth.refreshSession({ refresh_token });
  return !error;
}

function recordEvents(client: SupabaseClient): AuthChangeEvent[] {
  const events: AuthChangeEvent[] = [];
  client.auth.onAuthStateChange((event) => {
    events.push(event);
  });
  return events;
}

describe('installHandoffSession', () => {
  it('signs another account out, revoking its session, before installing the partner user', async () => {
    const other = await signUpUser(stack(), 'other');
    const partnerUser = await signUpUser(stack(), 'partner');
    const app = appClient(stack());
    await app.auth.signInWithPassword(other);
    const oldRefresh = (await app.auth.getSession()).data.session?.refresh_token as string;
    const events = recordEvents(app);

    const installed = await installHandoffSession(app, await mintSession(partnerUser), {
      confirmedReplacing: other.user_id,
    });

    expect(installed.replaced).toEqual({ user_id: other.user_id, email: other.email });
    expect((await app.auth.getSession()).data.session?.user.id).toBe(partnerUser.user_id);
    const { data: server } = await app.auth.getUser();
    expect(server.user?.email).toBe(partnerUser.email);
    // The other account is gone from the app first, then the partner user arrives.
    const after = events.slice(events.indexOf('INITIAL_SESSION') + 1);
    expect(after.indexOf('SIGNED_OUT')).toBeGreaterThanOrEqual(0);
    expect(after.lastIndexOf('SIGNED_IN')).toBeGreaterThan(after.indexOf('SIGNED_OUT'));
    expect(await refreshWorks(oldRefresh)).toBe(false);
    // Control: a session of the other account that was not replaced still refreshes.
    expect(await refreshWorks((await mintSession(other)).refresh_token)).toBe(true);
  });

  it('refuses to replace another user unless the switch was confirmed away from that user', async () => {
    const other = await signUpUser(stack(), 'other');
    const partnerUser = await signUpUser(stack(), 'partner');
    const app = appClient(stack());
    await app.auth.signInWithPassword(other);
    const events = recordEvents(app);
    for (const options of [{}, { confirmedReplacing: partnerUser.user_id }]) {
      await expect(
        installHandoffSession(app, await mintSession(partnerUser), options),
      ).rejects.toMatchObject({ name: 'CompanionHandoffError', code: 'confirmation_required' });
    }
    expect((await app.auth.getUser()).data.user?.id).toBe(other.user_id);
    expect(events).not.toContain('SIGNED_OUT');
  });

  it('installs the session in an app with no active account', async () => {
    const partnerUser = await signUpUser(stack(), 'partner');
    const app = appClient(stack());
    const installed = await installHandoffSession(app, await mintSession(partnerUser));
    expect(installed.replaced).toBeNull();
    expect((await app.auth.getUser()).data.user?.id).toBe(partnerUser.user_id);
  });

  it('replaces an older session of the same user without a SIGNED_OUT and revokes it', async () => {
    const partnerUser = await signUpUser(stack(), 'same');
    const app = appClient(stack());
    await app.auth.signInWithPassword(partnerUser);
    const oldRefresh = (await app.auth.getSession()).data.session?.refresh_token as string;
    const events = recordEvents(app);
    const handoff = await mintSession(partnerUser);

    await installHandoffSession(app, handoff);

    expect((await app.auth.getSession()).data.session?.refresh_token).toBe(handoff.refresh_token);
    expect(events).not.toContain('SIGNED_OUT');
    expect(await refreshWorks(oldRefresh)).toBe(false);
    expect((await app.auth.getUser()).data.user?.id).toBe(partnerUser.user_id);
  });

  it('refuses a session that names another user than /exchange did', async () => {
    const partnerUser = await signUpUser(stack(), 'partner');
    const someoneElse = await signUpUser(stack(), 'else');
    const handoff = { ...(await mintSession(partnerUser)), user_id: someoneElse.user_id };
    await expect(installHandoffSession(appClient(stack()), handoff)).rejects.toMatchObject({
      name: 'CompanionHandoffError',
      code: 'session_rejected',
    });
  });

  it('refuses tokens the auth server does not accept', async () => {
    const partnerUser = await signUpUser(stack(), 'partner');
    const handoff = { ...(await mintSession(partnerUser)), access_token: 'not.a.jwt' };
    await expect(installHandoffSession(appClient(stack()), handoff)).rejects.toMatchObject({
      code: 'session_rejected',
    });
  });
});

describe('completeHandoff, from the partner button to the signed-in companion app', () => {
  let broker: StandInBroker;
  beforeAll(async () => {
    broker = await startStandInBroker();
  });
  afterAll(async () => {
    await broker.close();
  });

  /** The partner side's four steps; returns the link the OS would hand to the companion app. */
  async function partnerOpensLink(): Promise<string> {
    const opened: string[] = [];
    await handOffToCompanion({
      brokerUrl: broker.brokerUrl,
      clientId: 'svc_partner_app',
      target: 'ios',
      appScheme: 'com.example.companion',
      credential: () => ({ backend_token: 'partner-user-token' }),
      openLink: (link) => {
        opened.push(link);
      },
    });
    return opened[0] as string;
  }

  const linkConfig = () => ({
    schemes: ['com.example.companion', 'companion-alias'],
    appLinkBase: broker.appLinkBase,
    brokerUrl: broker.brokerUrl,
  });

  it('never switches to another user silently: without confirm it is confirmation_required', async () => {
    const other = await signUpUser(stack(), 'other');
    const attacker = await signUpUser(stack(), 'attacker');
    let minted: HandoffSession | undefined;
    broker.session = async () => {
      minted = await mintSession(attacker);
      return minted;
    };
    const app = appClient(stack());
    await app.auth.signInWithPassword(other);
    const events = recordEvents(app);

    await expect(
      completeHandoff({ ...linkConfig(), url: await partnerOpensLink(), supabase: app }),
    ).rejects.toMatchObject({ name: 'CompanionHandoffError', code: 'confirmation_required' });

    expect((await app.auth.getSession()).data.session?.user.id).toBe(other.user_id);
    expect((await app.auth.getUser()).data.user?.id).toBe(other.user_id);
    expect(events).not.toContain('SIGNED_OUT');
    // The session minted for the other account is dead on the server, not merely not installed.
    expect(await refreshWorks(minted?.refresh_token as string)).toBe(false);
  });

  it('switches in place once the person confirms', async () => {
    const other = await signUpUser(stack(), 'other');
    const partnerUser = await signUpUser(stack(), 'partner');
    broker.session = () => mintSession(partnerUser);
    const app = appClient(stack());
    await app.auth.signInWithPassword(other);

    const done = await completeHandoff({
      ...linkConfig(),
      url: await partnerOpensLink(),
      supabase: app,
      confirm: () => true,
    });

    expect(done).toMatchObject({
      email: partnerUser.email,
      login_source: 'svc_partner_app',
      replaced: { user_id: other.user_id },
    });
    expect((await app.auth.getUser()).data.user?.id).toBe(partnerUser.user_id);
  });

  it('stays one tap without confirm when no account, or the same user, is signed in', async () => {
    const partnerUser = await signUpUser(stack(), 'partner');
    broker.session = () => mintSession(partnerUser);
    const app = appClient(stack());
    const first = await completeHandoff({
      ...linkConfig(),
      url: await partnerOpensLink(),
      supabase: app,
    });
    expect(first.replaced).toBeNull();
    const again = await completeHandoff({
      ...linkConfig(),
      url: await partnerOpensLink(),
      supabase: app,
    });
    expect(again.replaced).toEqual({ user_id: partnerUser.user_id, email: partnerUser.email });
    expect((await app.auth.getUser()).data.user?.id).toBe(partnerUser.user_id);
  });

  it('does not replace an account that signed in while the confirmation was on screen', async () => {
    const partnerUser = await signUpUser(stack(), 'partner');
    const latecomer = await signUpUser(stack(), 'late');
    let minted: HandoffSession | undefined;
    broker.session = async () => {
      minted = await mintSession(partnerUser);
      return minted;
    };
    const app = appClient(stack());

    await expect(
      completeHandoff({
        ...linkConfig(),
        url: await partnerOpensLink(),
        supabase: app,
        confirm: async () => {
          await app.auth.signInWithPassword(latecomer);
          return true;
        },
      }),
    ).rejects.toMatchObject({ code: 'confirmation_required' });

    expect((await app.auth.getUser()).data.user?.id).toBe(latecomer.user_id);
    expect(await refreshWorks(minted?.refresh_token as string)).toBe(false);
  });

  it('shows the confirmation who arrives and whom they replace', async () => {
    const other = await signUpUser(stack(), 'other');
    const partnerUser = await signUpUser(stack(), 'partner');
    broker.session = () => mintSession(partnerUser);
    const app = appClient(stack());
    await app.auth.signInWithPassword(other);
    const shown: HandoffArrival[] = [];

    await completeHandoff({
      ...linkConfig(),
      url: await partnerOpensLink(),
      supabase: app,
      confirm: (arrival) => {
        shown.push(arrival);
        return true;
      },
    });

    expect(shown).toEqual([
      {
        email: partnerUser.email,
        user_id: partnerUser.user_id,
        login_source: 'svc_partner_app',
        replacing: { user_id: other.user_id, email: other.email },
      },
    ]);
    expect((await app.auth.getUser()).data.user?.id).toBe(partnerUser.user_id);
  });

  it('keeps the active account and revokes the minted session when the user declines', async () => {
    const other = await signUpUser(stack(), 'other');
    const partnerUser = await signUpUser(stack(), 'partner');
    let minted: HandoffSession | undefined;
    broker.session = async () => {
      minted = await mintSession(partnerUser);
      return minted;
    };
    const app = appClient(stack());
    await app.auth.signInWithPassword(other);

    await expect(
      completeHandoff({
        ...linkConfig(),
        url: await partnerOpensLink(),
        supabase: app,
        confirm: () => false,
      }),
    ).rejects.toMatchObject({ code: 'declined' });

    expect((await app.auth.getUser()).data.user?.id).toBe(other.user_id);
    expect(await refreshWorks(minted?.refresh_token as string)).toBe(false);
  });

  it('leaves the active account alone when the link is malformed', async () => {
    const other = await signUpUser(stack(), 'other');
    const app = appClient(stack());
    await app.auth.signInWithPassword(other);
    const link = (await partnerOpensLink()).replace('#fed_verifier=', '#verifier=');
    await expect(
      completeHandoff({ ...linkConfig(), url: link, supabase: app }),
    ).rejects.toMatchObject({ code: 'malformed_link' });
    expect((await app.auth.getUser()).data.user?.id).toBe(other.user_id);
  });
});
