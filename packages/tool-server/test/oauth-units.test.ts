// Unit tests of the pure OAuth rules: redirect-URI policy and matching, resource indicators,
// PKCE, host allowlist, client addresses and the SSRF address filter. No network, no clock.
import { describe, expect, it } from 'vitest';
import { clientAddress } from '../src/http/client-address.ts';
import { Origins } from '../src/http/origins.ts';
import { acceptClientMetadata } from '../src/oauth/client-metadata.ts';
import { metadataDocumentUrlProblem } from '../src/oauth/client-metadata-document.ts';
import { OAuthError } from '../src/oauth/oauth-error.ts';
import { computeCodeChallenge, isWellFormedVerifier } from '../src/oauth/pkce.ts';
import { isPublicAddress } from '../src/oauth/public-address.ts';
import {
  matchesRegisteredRedirect,
  redirectTarget,
  redirectUriProblem,
} from '../src/oauth/redirect-uris.ts';
import { canonicalResource, namesThisResource } from '../src/oauth/resource.ts';

describe('redirect URIs at registration', () => {
  it.each([
    'https://claude.ai/api/mcp/auth_callback',
    'https://www.cursor.com/agents/mcp/oauth/callback',
    'http://127.0.0.1/callback',
    'http://127.0.0.1:33418/callback',
    'http://localhost:8787/callback',
    'http://[::1]:5000/cb',
    'cursor://anysphere.cursor-mcp/oauth/callback',
    'vscode://vscode.github-authentication/did-authenticate',
    'com.example.app:/oauth2redirect',
    'com.googleusercontent.apps.1234-abcd:/oauth2redirect',
    'io.github.some-org.tool://callback',
    'vscode-insiders://vscode.github-authentication/did-authenticate',
    'windsurf://codeium.windsurf/oauth/callback',
    'zed://oauth/callback',
    'claude://claude.ai/mcp/callback',
    'https://app.example.com/cb?tenant=1',
  ])('accepts %s', (uri) => {
    expect(redirectUriProblem(uri)).toBeUndefined();
  });

  it.each([
    ['http://example.com/cb', /not loopback/],
    ['http://127.0.0.2/cb', /not loopback/],
    ['http://localhost.evil.com/cb', /not loopback/],
    ['https://example.com/cb#frag', /fragment/],
    ['https://user:pw@example.com/cb', /user information/],
    ['javascript:alert(1)', /javascript/],
    ['data:text/html,hi', /data/],
    ['file:///etc/passwd', /file/],
    ['/relative/cb', /absolute/],
    // OS and browser handlers (docs/tool-server.md "Redirect URIs"): the consent page's redirect
    // would hand them to Windows, macOS or the browser rather than to a client.
    ['search-ms:query=invoice&crumb=location:\\\\evil.example\\share', /search-ms/],
    ['ms-officecmd:{"id":3,"LocalProviders.LaunchOfficeAppForResult":{}}', /ms-officecmd/],
    ['ms-msdt:/id%20PCWDiagnostic', /ms-msdt/],
    ['ms-settings:privacy', /ms-settings/],
    ['search:query=x', /search/],
    ['shell:startup', /shell/],
    ['jar:https://evil.example/a.jar!/cb', /jar/],
    ['x-apple.systempreferences:com.apple.preference.security', /x-apple/],
    ['itms-services://?action=download-manifest&url=https://evil.example/m', /itms-services/],
    ['myapp://callback', /myapp/],
    ['mailto:a@evil.example', /mailto/],
    ['blob:https://evil.example/0', /blob/],
    ['https://exa mple.com/cb', /whitespace/],
    ['https://example.com/\ncb', /whitespace/],
    [`https://example.com/${'a'.repeat(2_100)}`, /longer/],
  ])('refuses %s', (uri, reason) => {
    expect(redirectUriProblem(uri)).toMatch(reason);
  });
});

describe('redirect URI matching', () => {
  const registered = [
    'http://127.0.0.1/callback',
    'http://localhost:8787/cb',
    'https://app.example.com/cb',
    'cursor://anysphere.cursor-mcp/oauth/callback',
  ];

  it.each([
    ['http://127.0.0.1/callback', true],
    ['http://127.0.0.1:51004/callback', true],
    ['http://localhost:1234/cb', true],
    ['https://app.example.com/cb', true],
    ['cursor://anysphere.cursor-mcp/oauth/callback', true],
    // RFC 8252 §7.3 relaxes the port only; host, path, query and scheme stay exact.
    ['http://localhost:51004/callback', false],
    ['http://127.0.0.1:51004/callback/', false],
    ['http://127.0.0.1:51004/callback?x=1', false],
    ['https://127.0.0.1:51004/callback', false],
    ['https://app.example.com:8443/cb', false],
    ['https://app.example.com/cb/', false],
    ['https://APP.example.com/cb', false],
    ['https://app.example.com/cb?x=1', false],
    ['cursor://anysphere.cursor-mcp/oauth/callback2', false],
    ['http://127.0.0.1:51004/callback#x', false],
  ])('%s → %s', (requested, expected) => {
    expect(matchesRegisteredRedirect(requested, registered)).toBe(expected);
  });

  it('names the host, or the private scheme, the user will be sent to', () => {
    expect(redirectTarget('https://claude.ai/api/mcp/auth_callback')).toBe('claude.ai');
    expect(redirectTarget('http://127.0.0.1:5000/cb')).toBe('127.0.0.1:5000');
    expect(redirectTarget('com.example.app:/cb')).toBe('com.example.app://');
  });
});

describe('client metadata', () => {
  it('defaults to client_secret_basic and authorization_code as RFC 7591 §2 says', () => {
    const accepted = acceptClientMetadata({ redirect_uris: ['https://a.example/cb'] });
    expect(accepted.token_endpoint_auth_method).toBe('client_secret_basic');
    expect(accepted.grant_types).toEqual(['authorization_code']);
  });

  it('ignores unknown fields and keeps an unknown scope as sent', () => {
    const accepted = acceptClientMetadata({
      redirect_uris: ['https://a.example/cb'],
      scope: 'openid email profile',
      jwks_uri: 'https://a.example/jwks',
      something_else: { deep: true },
    });
    expect(accepted.scope).toBe('openid email profile');
    expect(accepted.echo).not.toHaveProperty('something_else');
  });

  it.each([
    [{}, 'invalid_redirect_uri'],
    [{ redirect_uris: [] }, 'invalid_redirect_uri'],
    [{ redirect_uris: 'https://a.example/cb' }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: [42] }, 'invalid_redirect_uri'],
    [
      { redirect_uris: ['https://a.example/cb'], grant_types: ['client_credentials'] },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], grant_types: ['refresh_token'] },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], response_types: ['token'] },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'private_key_jwt' },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], logo_uri: 'javascript:alert(1)' },
      'invalid_client_metadata',
    ],
    [{ redirect_uris: ['https://a.example/cb'], client_name: '' }, 'invalid_client_metadata'],
    [['https://a.example/cb'], 'invalid_client_metadata'],
  ])('refuses %j with %s', (body, code) => {
    let caught: unknown;
    try {
      acceptClientMetadata(body);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(OAuthError);
    expect((caught as OAuthError).code).toBe(code);
  });
});

describe('resource indicators', () => {
  it('treats https://host and https://host/ as this server, and nothing else', () => {
    const origin = 'https://mcp.example.com';
    expect(namesThisResource('https://mcp.example.com', origin)).toBe(true);
    expect(namesThisResource('https://mcp.example.com/', origin)).toBe(true);
    expect(namesThisResource('HTTPS://MCP.EXAMPLE.COM', origin)).toBe(true);
    expect(namesThisResource('https://mcp.example.com:443/', origin)).toBe(true);
    expect(namesThisResource('https://mcp.example.com/other', origin)).toBe(false);
    expect(namesThisResource('https://mcp.example.com/#x', origin)).toBe(false);
    expect(namesThisResource('https://mcp.example.com:8443', origin)).toBe(false);
    expect(namesThisResource('https://evil.example', origin)).toBe(false);
    expect(namesThisResource('not a uri', origin)).toBe(false);
    expect(canonicalResource('http://127.0.0.1:5/')).toBe('http://127.0.0.1:5');
  });
});

describe('PKCE', () => {
  it('computes the RFC 7636 appendix B challenge', () => {
    expect(computeCodeChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
  });

  it.each([
    ['a'.repeat(42), false],
    ['a'.repeat(43), true],
    ['a'.repeat(128), true],
    ['a'.repeat(129), false],
    [`${'a'.repeat(42)}+`, false],
    [`${'a'.repeat(40)}-._~`, true],
  ])('verifier %s well-formed: %s', (verifier, expected) => {
    expect(isWellFormedVerifier(verifier)).toBe(expected);
  });
});

describe('hosts served', () => {
  const origins = new Origins(['http://127.0.0.1:54324', 'http://localhost:54325']);

  it.each([
    ['127.0.0.1:54324', 'http://127.0.0.1:54324'],
    ['localhost:54325', 'http://localhost:54325'],
    ['LOCALHOST:54325', 'http://localhost:54325'],
    ['127.0.0.1:54325', undefined],
    ['localhost:54324', undefined],
    ['evil.example:54324', undefined],
    ['127.0.0.1:54324@evil.example', undefined],
    ['127.0.0.1:54324/x', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('Host %s → %s', (host, expected) => {
    expect(origins.fromHost(host)).toBe(expected);
  });

  it('serves a default-port https origin by its bare host', () => {
    const production = new Origins(['https://mcp.example.com', 'https://legacy.example.com']);
    expect(production.fromHost('mcp.example.com')).toBe('https://mcp.example.com');
    expect(production.fromHost('mcp.example.com:443')).toBe('https://mcp.example.com');
  });
});

describe('client addresses for rate limits', () => {
  it('uses the socket address unless proxies are trusted', () => {
    expect(clientAddress('10.0.0.1', '1.2.3.4', 0)).toBe('10.0.0.1');
  });

  it('takes the entry the trusted proxy wrote, not one the client sent', () => {
    expect(clientAddress('10.0.0.1', 'forged, 203.0.113.9', 1)).toBe('203.0.113.9');
    expect(clientAddress('10.0.0.1', 'forged, 203.0.113.9, 10.0.0.2', 2)).toBe('203.0.113.9');
  });
});

describe('metadata-document fetch guard', () => {
  it.each([
    ['8.8.8.8', true],
    ['2606:4700:4700::1111', true],
    ['127.0.0.1', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['192.168.1.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['::1', false],
    ['::ffff:127.0.0.1', false],
    ['fd00::1', false],
    ['fe80::1', false],
    ['::7f00:1', false],
    ['::ffff:0:7f00:1', false],
    ['fec0::1', false],
    ['not-an-ip', false],
  ])('%s is public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });

  it.each([
    ['https://client.example/oauth/client.json', undefined],
    ['http://client.example/client.json', /https/],
    ['https://client.example', /path/],
    ['https://client.example/', /path/],
    ['https://client.example/a/../b.json', /dot segments/],
    ['https://user@client.example/c.json', /user information/],
    ['https://client.example/c.json#x', /fragment/],
  ])('client_id URL %s', (url, problem) => {
    if (problem) expect(metadataDocumentUrlProblem(url)).toMatch(problem);
    else expect(metadataDocumentUrlProblem(url)).toBeUndefined();
  });
});
