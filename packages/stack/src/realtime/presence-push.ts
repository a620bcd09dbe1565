// A client's presence push, `{type: 'presence', event: 'track' | 'untrack', payload}`, decided as
// upstream's PresenceHandler decides it (docs/realtime.md "Presence"): the reply, whether the
// member now gets the room's presence_state, or the rate limit's close. The socket session sends.
import { isObject } from './channel-access.ts';
import type { ChannelMember } from './channel-member.ts';
import type { PresenceHub } from './presence.ts';

/** Upstream's client presence limit (CLIENT_PRESENCE_MAX_CALLS, _WINDOW_MS): 5 pushes in 30 s. */
export const MAX_PRESENCE_CALLS = 5;
const PRESENCE_WINDOW_MS = 30_000;

export type PresencePushOutcome =
  | { close: string }
  | { status: 'ok' | 'error'; response: object; sync: boolean };

/**
 * A track on a private channel needs presence write. A track turns presence on for a member that
 * had it off, which then gets the room's presence_state (`sync`). The same payload again changes
 * nothing; more than 5 pushes in 30 s close the channel.
 */
export function handlePresencePush(
  hub: PresenceHub,
  member: ChannelMember,
  push: Record<string, unknown>,
  now = Date.now(),
): PresencePushOutcome {
  const settings = member.presence;
  if (now - settings.windowStart > PRESENCE_WINDOW_MS) {
    settings.windowStart = now;
    settings.calls = 0;
  }
  if (settings.calls >= MAX_PRESENCE_CALLS) return { close: 'Client presence rate limit exceeded' };
  settings.calls += 1;
  const event = typeof push.event === 'string' ? push.event.toLowerCase() : '';
  if (event === 'untrack') {
    hub.untrack(member);
    return { status: 'ok', response: {}, sync: false };
  }
  if (event !== 'track' || (member.private && member.policies?.presence.write !== true)) {
    return { status: 'error', response: {}, sync: false };
  }
  const payload = push.payload ?? {};
  if (!isObject(payload)) {
    return {
      status: 'error',
      response: { reason: 'Presence track payload must be a map' },
      sync: false,
    };
  }
  hub.track(member, payload);
  const sync = !settings.enabled;
  settings.enabled = true;
  return { status: 'ok', response: {}, sync };
}
