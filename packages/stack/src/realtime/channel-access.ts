// What a join's config asks for and what a private channel lets its member do, as Supabase Realtime
// reads and decides them (payloads/join.ex, realtime_channel.ex maybe_assign_policies and
// check_read_permissions_revoked). docs/realtime.md "Private channels" and "Presence".
import { randomUUID } from 'node:crypto';
import type { ChannelPolicies } from './authorization.ts';
import type { ChannelMember, PresenceSettings } from './channel-member.ts';
import type { Claims } from './tokens.ts';

/** Upstream's wording when the project database cannot be reached for a policy check. */
export const DATABASE_UNAVAILABLE = 'Realtime was unable to connect to the project database';

export type Authorize = (topic: string, claims: Claims) => Promise<ChannelPolicies>;

/** Upstream's FlexibleBoolean: true or "true". */
export const isTrue = (value: unknown) => value === true || value === 'true';

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The channel's name as realtime.topic() and the error messages give it. */
export const subTopicOf = (topic: string) => topic.replace(/^realtime:/, '');

/**
 * `config.presence` as upstream reads it: without a presence object presence is enabled; an empty
 * or missing key becomes a generated UUID; a number or boolean key is used as its text, since
 * presence_state keys are JSON object keys.
 */
export function presenceSettingsOf(config: Record<string, unknown>): PresenceSettings {
  const presence = config.presence;
  const key = isObject(presence) ? presence.key : undefined;
  const given =
    (typeof key === 'string' && key !== '') || typeof key === 'number' || typeof key === 'boolean';
  return {
    key: given ? String(key) : randomUUID(),
    enabled: isObject(presence) ? isTrue(presence.enabled) : true,
    calls: 0,
    windowStart: 0,
  };
}

/**
 * A private join needs broadcast read, or presence read when presence is enabled (upstream leaves
 * presence read unevaluated otherwise). Returns the policies, or the join's error reason.
 */
export async function authorizeJoin(
  authorize: Authorize,
  topic: string,
  claims: Claims,
  presenceEnabled: boolean,
): Promise<ChannelPolicies | string> {
  let policies: ChannelPolicies;
  try {
    policies = await authorize(subTopicOf(topic), claims);
  } catch {
    return DATABASE_UNAVAILABLE;
  }
  if (policies.broadcast.read || (presenceEnabled && policies.presence.read)) return policies;
  return `Unauthorized: You do not have permissions to read from this Channel topic: ${subTopicOf(topic)}`;
}

/**
 * A private member's policies under a new token. Upstream closes the channel when a read it had
 * is gone (presence read counts once presence is on); the string is that closing message.
 */
export async function reauthorize(
  authorize: Authorize,
  member: ChannelMember,
  claims: Claims,
): Promise<ChannelPolicies | string> {
  let policies: ChannelPolicies;
  try {
    policies = await authorize(subTopicOf(member.topic), claims);
  } catch {
    return DATABASE_UNAVAILABLE;
  }
  const before = member.policies;
  const lostBroadcast = before?.broadcast.read && !policies.broadcast.read;
  const lostPresence = member.presence.enabled && before?.presence.read && !policies.presence.read;
  if (lostBroadcast || lostPresence) {
    return `You no longer have permission to read from this Channel topic: ${subTopicOf(member.topic)}`;
  }
  return policies;
}
