// The MCP endpoint's protocol edges: standard JSON-RPC error codes for malformed requests, an
// unknown tool, an expired token, a valid token from a refused Origin, and the MCP Apps widgets
// (ui:// resources with content hashes; an old hash is answered with the current bundle, 001 §6).
import { SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { connectClient } from './helpers/mcp-clients.ts';
import { authorizeAndExchange, postToMcp, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack();
let token = '';
beforeAll(async () => {
  token = (await authorizeAndExchange(stack())).access_token;
});

async function rpc(body: string) {
  const response = await postToMcp(stack().mcpUrl, token, body);
  const text = await response.text();
  const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '{}');
  return { status: response.status, body: JSON.parse(json) as { error?: { code: number } } };
}

describe('JSON-RPC errors', () => {
  it('answers unparsable JSON with -32700', async () => {
    const answer = await rpc('{"jsonrpc": "2.0", "id": 1, "method": ');
    expect(answer.status).toBe(400);
    expect(answer.body.error?.code).toBe(-32700);
  });

  it('answers a body over 4 MiB with 413 and -32000, with or without its length', async () => {
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'ping',
      pad: 'x'.repeat(5 << 20),
    });
    const sized = await rpc(huge);
    expect(sized.status).toBe(413);
    expect(sized.body.error?.code).toBe(-32000);
    // Chunked, no Content-Length: refused as the stream passes the limit.
    const bytes = new TextEncoder().encode(huge);
    const chunked = await fetch(`${stack().mcpUrl}/`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: new ReadableStream({
        start(controller) {
          for (let at = 0; at < bytes.length; at += 1 << 20)
            controller.enqueue(bytes.subarray(at, at + (1 << 20)));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
  });

  it('answers a message that is not JSON-RPC with -32600', async () => {
    const answer = await rpc(JSON.stringify({ hello: 'world' }));
    expect(answer.status).toBe(400);
    expect(answer.body.error?.code).toBe(-32600);
  });

  it('answers an unknown tool with -32602 and an unknown method with -32601', async () => {
    const client = await connectClient('v1', stack().mcpUrl, token);
    try {
      await expect(client.callTool('no_such_tool')).rejects.toMatchObject({ code: -32602 });
    } finally {
      await client.close();
    }
    const unknown = await rpc(
      JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/frobnicate', params: {} }),
    );
    expect(unknown.body.error?.code).toBe(-32601);
  });
});

describe('tokens and origins', () => {
  it('answers 401 with the challenge for a token that expired', async () => {
    const claims = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString());
    const expired = await new SignJWT({ ...claims, exp: Math.floor(Date.now() / 1000) - 60 })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(new TextEncoder().encode(stack().keys.jwtSecret));
    const response = await postToMcp(stack().mcpUrl, expired);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });

  it('refuses a valid token sent from an Origin it does not serve, with 403', async () => {
    const response = await fetch(`${stack().mcpUrl}/`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        origin: 'https://evil.example',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(403);
  });
});

describe('widgets', () => {
  it('links the traffic summary, status board and request views through ui:// resources', async () => {
    const client = await connectClient('v1', stack().mcpUrl, token);
    try {
      const tools = await client.listTools();
      const linked = tools.flatMap((tool) => {
        const ui = tool._meta?.ui as { resourceUri: string } | undefined;
        return ui ? [[tool.name, ui.resourceUri]] : [];
      });
      expect(Object.fromEntries(linked)).toMatchObject({
        summarize_device_traffic: expect.stringMatching(
          /^ui:\/\/capture-platform\/traffic-summary-[0-9a-f]{12}\.html$/,
        ),
        inspect_requests: expect.stringMatching(/request-detail-[0-9a-f]{12}\.html$/),
      });
    } finally {
      await client.close();
    }
  });

  it('serves each bundle as text/html;profile=mcp-app, and the current one for an old hash', async () => {
    const list = await rpc(
      JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'resources/list', params: {} }),
    );
    const resources = (
      list.body as { result: { resources: Array<{ uri: string; mimeType: string }> } }
    ).result.resources;
    expect(resources.map((resource) => resource.mimeType)).toEqual(
      resources.map(() => 'text/html;profile=mcp-app'),
    );
    const summary = resources.find((resource) => resource.uri.includes('traffic-summary'));
    const read = async (uri: string) =>
      (
        (
          await rpc(
            JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri } }),
          )
        ).body as { result: { contents: Array<{ uri: string; mimeType: string; text: string }> } }
      ).result.contents[0];
    const current = await read(summary?.uri as string);
    expect(current?.text).toMatch(/^<!doctype html>/);
    expect(current?.text).toMatch(/ui\/initialize/);
    const old = await read('ui://capture-platform/traffic-summary-000000000000.html');
    expect(old?.text).toBe(current?.text);
    expect(old?.mimeType).toBe('text/html;profile=mcp-app');
    const missing = await rpc(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 4,
        method: 'resources/read',
        params: { uri: 'ui://capture-platform/other-000000000000.html' },
      }),
    );
    expect(missing.body.error?.code).toBe(-32602);
  });
});
