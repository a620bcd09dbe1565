// POST /exchange (000 §4.3): SHA-256 of the verifier must equal the stored challenge (000 §1
// rule 3); the code is consumed by one atomic update (rule 4); then the account is chosen
// (000 §4.5) and a real session minted (000 §2.5), recorded for cascade revocation
// (docs/federation.md "Cascade revocation").
import { computeCodeChallenge, isValidCodeVerifier } from '../_shared/federation/pkce.ts';
import { type AccountFacts, chooseAccount } from './account-choice.ts';
import { settleAccount } from './account-provisioning.ts';
import { BrokerError } from './broker-error.ts';
import type { RequestClock } from './clock.ts';
import { hashHandoffCode, isWellFormedHandoffCode } from './handoff-code.ts';
import { logEvent } from './log.ts';
import { exchangeBodySchema, readJsonBody } from './request-body.ts';
import { jsonResponse } from './responses.ts';
import { mintSession } from './session-minting.ts';
import { recordSession } from './session-recording.ts';
import type { BrokerDeps } from './start-handler.ts';

type ConsumeOutcome =
  | ({
    status: 'consumed';
    client_id: string;
    capped_role: string;
    partner_sub: string;
    partner_email: string | null;
  } & AccountFacts)
  | { status: 'rate_limited' | 'gone' | 'mismatch' };

export async function handleExchange(
  request: Request,
  deps: BrokerDeps,
  clock: RequestClock,
  clientIp: string,
): Promise<Response> {
  const body = await readJsonBody(request, exchangeBodySchema);
  // RFC 7636 §4.1: a verifier outside the alphabet or length is malformed, not merely wrong.
  if (!isValidCodeVerifier(body.code_verifier)) {
    throw new BrokerError('invalid_request', 'verifier shape', {
      message: 'code_verifier must be 43-128 characters of [A-Za-z0-9-._~].',
    });
  }
  // A code we could never have issued is unknown: the same 410 as used or expired ones.
  const codeHash = isWellFormedHandoffCode(body.code) ? await hashHandoffCode(body.code) : '00';
  let outcome: ConsumeOutcome;
  try {
    outcome = await deps.api.rpc<ConsumeOutcome>('federation_broker_consume_code', {
      code_hash: codeHash,
      code_challenge: await computeCodeChallenge(body.code_verifier),
      client_ip: clientIp,
      at: clock.injected ? new Date(clock.now()).toISOString() : null,
    });
  } catch (cause) {
    throw new BrokerError('rate_limited', 'rate limiter unavailable', { cause });
  }
  switch (outcome.status) {
    case 'rate_limited':
      throw new BrokerError('rate_limited', 'exchange limit');
    case 'gone':
      throw new BrokerError('code_gone', 'code used, expired or unknown');
    case 'mismatch':
      throw new BrokerError('verifier_mismatch', 'challenge mismatch');
  }
  const subject = {
    clientId: outcome.client_id,
    partnerSub: outcome.partner_sub,
    cappedRole: outcome.capped_role,
  };
  const choice = chooseAccount(outcome);
  const account = await settleAccount(deps.api, subject, choice);
  const session = await mintSession(deps.api, account);
  await recordSession(deps.api, subject, session);
  logEvent('handoff_exchanged', { client_id: outcome.client_id, account: choice.kind });
  return jsonResponse(200, {
    access_token: session.access_token,
    refresh_token: session.refresh_token,
    expires_in: session.expires_in,
    user_id: session.user.id,
    // 000 §2.5: the partner user's real e-mail, normalised; the account's own when the partner
    // sent none.
    email: outcome.email_normalized ?? outcome.partner_email ?? account.email,
    login_source: outcome.client_id,
  });
}
