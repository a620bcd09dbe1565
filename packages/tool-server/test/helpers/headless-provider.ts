// An MCP SDK `OAuthClientProvider` that runs the browser part of the flow headless: it opens the
// authorization URL without following redirects, approves on the consent page through the consent
// API as a signed-in dashboard user, and keeps the redirect back to the client. One class serves
// the v1 (`@modelcontextprotocol/sdk`) and v2 (`@modelcontextprotocol/client`) clients; the type
// parameters are each SDK's stored client information, token and discovery-state types.
import { randomBytes, randomUUID } from 'node:crypto';
import type { RunningStack } from '@capture/stack';
import { approveViaConsentApi, DEMO } from './oauth-stack.ts';

export interface HeadlessProviderOptions {
  stack: RunningStack;
  /** The redirect URI the client registers and sends (a loopback URI nobody listens on). */
  redirectUrl: string;
  clientName: string;
  login?: { email: string; password: string };
  /**
   * Leave token_endpoint_auth_method out of the registration, so RFC 7591's default
   * (client_secret_basic) applies and the client gets a secret; otherwise it registers as `none`.
   */
  omitAuthMethod?: boolean;
  /**
   * The user agent's part: from the authorization URL to the redirect back to the client.
   * Default: the consent API (`approveViaConsentApi`); a browser test passes the real page.
   */
  approve?: (authorizationUrl: URL) => Promise<URL>;
}

export class HeadlessOAuthProvider<ClientInformation, Tokens, DiscoveryState = unknown> {
  /** Every authorization URL the SDK asked the user agent to open, in order. */
  readonly authorizationUrls: URL[] = [];
  /** Every `state` this provider handed the SDK, in order. */
  readonly states: string[] = [];
  /** The redirect back to the client after the last consent: code, state and iss. */
  callbackUrl: URL | undefined;
  private information: ClientInformation | undefined;
  private tokenSet: Tokens | undefined;
  private discovery: DiscoveryState | undefined;
  private verifier = '';
  private readonly options: HeadlessProviderOptions;
  private readonly softwareId = randomUUID();

  constructor(options: HeadlessProviderOptions) {
    this.options = options;
  }

  get redirectUrl(): string {
    return this.options.redirectUrl;
  }

  get clientMetadata() {
    return {
      redirect_uris: [this.options.redirectUrl],
      client_name: this.options.clientName,
      // Each provider its own client (tests count the requests of one), where the same loopback
      // registration from one address would otherwise get the same client_id.
      software_id: this.softwareId,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...(this.options.omitAuthMethod ? {} : { token_endpoint_auth_method: 'none' }),
    };
  }

  state(): string {
    const state = randomBytes(16).toString('base64url');
    this.states.push(state);
    return state;
  }

  clientInformation(): ClientInformation | undefined {
    return this.information;
  }

  saveClientInformation(information: ClientInformation): void {
    this.information = information;
  }

  tokens(): Tokens | undefined {
    return this.tokenSet;
  }

  saveTokens(tokens: Tokens): void {
    this.tokenSet = tokens;
  }

  // Kept like the verifier, so v2 can bind the callback leg to the issuer it discovered (SEP-2352).
  saveDiscoveryState(state: DiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): DiscoveryState | undefined {
    return this.discovery;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    this.authorizationUrls.push(authorizationUrl);
    this.callbackUrl = this.options.approve
      ? await this.options.approve(authorizationUrl)
      : await approveViaConsentApi(
          this.options.stack,
          authorizationUrl,
          this.options.login ?? DEMO.member,
        );
  }
}
