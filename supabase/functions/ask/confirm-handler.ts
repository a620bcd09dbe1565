// POST /functions/v1/ask/confirm {confirmation}: a person confirms a write the assistant proposed
// as an `artifact` (001 §4.3). The database applies it as the caller, once, and only from a
// dashboard session (docs/assistant.md "Writes"): any other token, an MCP client's OAuth token
// among them, is 403 dashboard_session_required; a confirmation of another user, unknown or
// expired is 404 not_found (the same answer), a second use 409 already_applied, a role without
// the edit capability 403 forbidden.
import type { Caller } from '../_shared/caller.ts';
import { createCallerClient, dataOf, DataQueryError } from './data-api.ts';
import { logEvent } from './log.ts';
import { BadRequest } from './request.ts';
import { errorResponse, jsonResponse } from './responses.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function confirmationOf(body: unknown): string {
  const value = body && typeof body === 'object'
    ? (body as Record<string, unknown>).confirmation
    : undefined;
  if (typeof value !== 'string' || !UUID.test(value)) {
    throw new BadRequest('confirmation is required: the id from the artifact');
  }
  return value.toLowerCase();
}

export async function confirmWrite(
  caller: Caller,
  confirmation: string,
  db: ReturnType<typeof createCallerClient>,
): Promise<Response> {
  try {
    const applied = dataOf(
      await db.rpc('assistant_confirm_write', { confirmation }),
    ) as Record<string, unknown>;
    logEvent('write_confirmed', { user: caller.user_id, action: applied.action });
    return jsonResponse(200, applied);
  } catch (error) {
    const code = error instanceof DataQueryError ? error.code : undefined;
    logEvent('write_refused', { user: caller.user_id, code });
    if (code === 'PT404') {
      return errorResponse(404, 'not_found', 'No pending proposal with this confirmation for you.');
    }
    if (code === 'PT409') {
      return errorResponse(409, 'already_applied', 'This confirmation was already used.');
    }
    if (code === 'PT403') {
      return errorResponse(
        403,
        'dashboard_session_required',
        'A proposed change is confirmed by a person signed in to the dashboard, not with an ' +
          "OAuth client's token.",
      );
    }
    if (code === '42501') {
      return errorResponse(403, 'forbidden', 'Your role may not make this change.');
    }
    return errorResponse(503, 'unavailable', 'The change could not be applied just now.', {
      'retry-after': '5',
    });
  }
}
