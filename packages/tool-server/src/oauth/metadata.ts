// Discovery documents, built for the origin called (001 §4.1: each host is its own issuer):
// RFC 8414 authorization-server metadata and RFC 9728 protected-resource metadata.
import { DASHBOARD_SCOPE } from './scope.ts';

export const PRODUCT_NAME = 'capture-platform';

const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'];

export function authorizationServerMetadata(origin: string) {
  return {
    issuer: origin,
    authorization_endpoint: `${origin}/authorize`,
    token_endpoint: `${origin}/token`,
    registration_endpoint: `${origin}/register`,
    revocation_endpoint: `${origin}/revoke`,
    scopes_supported: [DASHBOARD_SCOPE],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: AUTH_METHODS,
    revocation_endpoint_auth_methods_supported: AUTH_METHODS,
    code_challenge_methods_supported: ['S256'],
    // RFC 9207: iss is in every authorization response.
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
  };
}

export function protectedResourceMetadata(origin: string) {
  return {
    resource: origin,
    authorization_servers: [origin],
    scopes_supported: [DASHBOARD_SCOPE],
    bearer_methods_supported: ['header'],
    resource_name: 'Capture platform tool server',
  };
}

export function protectedResourceMetadataUrl(origin: string): string {
  return `${origin}/.well-known/oauth-protected-resource`;
}
