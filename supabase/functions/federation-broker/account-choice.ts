// 000 §4.5: which account a consumed hand-off signs into. Pure, so each rule is unit-tested.
// Order: the (client_id, partner sub) mapping first (never the e-mail again once linked, the
// nOAuth lesson), then the unused e-mail, then trusted linking, else a synthetic address.

export interface AccountFacts {
  email_linking_trusted: boolean;
  email_normalized: string | null;
  mapped: { user_id: string; email: string; provisioned: boolean } | null;
  collision: { user_id: string; email: string; linkable: boolean } | null;
}

export type AccountChoice =
  | { kind: 'mapped'; userId: string; email: string }
  | { kind: 'provision'; email: string }
  | { kind: 'link'; userId: string; email: string }
  | { kind: 'provision_synthetic' };

export function chooseAccount(facts: AccountFacts): AccountChoice {
  if (facts.mapped) {
    return { kind: 'mapped', userId: facts.mapped.user_id, email: facts.mapped.email };
  }
  // Rule 1: an unused, safely comparable e-mail is provisioned as is.
  if (facts.email_normalized && !facts.collision) {
    return { kind: 'provision', email: facts.email_normalized };
  }
  // Rule 3: only when the client is trusted and the account is neither an admin nor federated.
  if (facts.collision && facts.email_linking_trusted && facts.collision.linkable) {
    return { kind: 'link', userId: facts.collision.user_id, email: facts.collision.email };
  }
  // Rule 2 (and an e-mail that cannot be compared safely): never take the existing account over.
  return { kind: 'provision_synthetic' };
}
