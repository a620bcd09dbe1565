// The link /start returns (000 §4.1): `{app_link_base}/app/auth/federation?code=<code>` whatever
// the target, carrying the code and never a token. The target only tells the partner which deep
// link to build from that code (000 §4.2: the custom scheme for `ios`, this URL for
// `universal`); it is echoed in the answer.
import type { BrokerConfig } from './config.ts';

export function buildHandoffLink(config: Pick<BrokerConfig, 'appLinkBase'>, code: string): string {
  return `${config.appLinkBase}/app/auth/federation?code=${encodeURIComponent(code)}`;
}
