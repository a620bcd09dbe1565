// The link /start returns (000 §4.1): it carries the code and never a token. `universal` is the
// https app link; `ios` the app's custom scheme (000 §4.2). Both carry the same ?code=.
import type { BrokerConfig } from './config.ts';

export function buildHandoffLink(
  config: Pick<BrokerConfig, 'appLinkBase' | 'appScheme'>,
  target: 'ios' | 'universal',
  code: string,
): string {
  const query = `code=${encodeURIComponent(code)}`;
  return target === 'ios'
    ? `${config.appScheme}://auth/federation?${query}`
    : `${config.appLinkBase}/app/auth/federation?${query}`;
}
