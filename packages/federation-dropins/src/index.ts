// Public surface of the federation drop-ins: the partner helper (also the web script's source),
// the partner backend's HMAC signer, and the companion app's side of the hand-off.
export {
  CompanionHandoffError,
  type CompanionHandoffErrorCode,
} from './companion/companion-handoff-error.ts';
export {
  type CompletedHandoff,
  type CompleteHandoffOptions,
  completeHandoff,
  type HandoffArrival,
} from './companion/complete-handoff.ts';
export {
  type ExchangeRequest,
  exchangeHandoffCode,
  type HandoffSession,
} from './companion/exchange-handoff-code.ts';
export {
  type InstalledSession,
  installHandoffSession,
  readActiveAccount,
} from './companion/install-handoff-session.ts';
export {
  type HandoffLink,
  type HandoffLinkConfig,
  parseHandoffLink,
} from './companion/parse-handoff-link.ts';
export {
  buildHandoffLink,
  type CryptoSource,
  computeCodeChallenge,
  createCodeVerifier,
  createPkcePair,
  credentialFromPartnerBackend,
  encodeBase64Url,
  HandoffError,
  type HandoffErrorCode,
  type HandoffOptions,
  type HandoffStarted,
  type HandoffTarget,
  type HmacPayload,
  handOffToCompanion,
  isCodeVerifier,
  type LinkParts,
  type PkcePair,
  requestHandoffCode,
  type StartCredential,
  type StartOptions,
  type StartResult,
  sha256,
} from './partner/federation-handoff.ts';
export {
  canonicalJson,
  createHmacPayload,
  signHmacPayload,
} from './partner-backend/sign-hmac-payload.ts';
