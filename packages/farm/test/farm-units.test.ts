// Unit tests of the farm gate's pure parts: the canonical JSON a confirmation binds, what the audit
// keeps of arguments (long strings by digest) and of outputs (allow-listed fields only).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { argumentsForLog, outcomeSummary } from '../src/audit.ts';
import { redactCommandCredentials } from '../src/command-credentials.ts';
import { canonicalJson } from '../src/confirmations.ts';

describe('canonicalJson', () => {
  it('gives equal arguments equal text whatever their key order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: 'x' } })).toBe(
      canonicalJson({ a: { c: 'x', d: [1, { e: 3, f: 2 }] }, b: 1 }),
    );
  });

  it('tells different arguments apart, including types and undefined members', () => {
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: '1' }));
    expect(canonicalJson({ a: [1, 2] })).not.toBe(canonicalJson({ a: [2, 1] }));
    expect(canonicalJson({ a: 1, b: undefined })).toBe(canonicalJson({ a: 1 }));
    expect(canonicalJson({ 'a"b': 1 })).toBe('{"a\\"b":1}');
  });
});

describe('argumentsForLog', () => {
  it('keeps short values and replaces a long string by its length and SHA-256', () => {
    const upload = 'A'.repeat(3_000_000);
    const logged = argumentsForLog({ device_uuid: 'd1', apk_base64: upload, flags: ['-r'] });
    expect(logged).toEqual({
      device_uuid: 'd1',
      apk_base64: {
        omitted: 'long string',
        length: 3_000_000,
        sha256: createHash('sha256').update(upload).digest('hex'),
      },
      flags: ['-r'],
    });
    expect(JSON.stringify(logged).length).toBeLessThan(300);
  });
});

describe('credentials in a command line', () => {
  // Each command carries the secret `hunter2` (or a token) in a spelling its tool understands;
  // the preview must keep the command readable and lose the secret.
  it.each([
    ['curl -u user:hunter2 https://api.example/', 'curl -u [redacted] https://api.example/'],
    ['curl -uuser:hunter2 https://api.example/', 'curl -u[redacted] https://api.example/'],
    ['curl -sSu user:hunter2 https://api.example/', 'curl -sSu [redacted] https://api.example/'],
    ['curl --user user:hunter2 https://x/', 'curl --user [redacted] https://x/'],
    ['curl --user=a:hunter2 https://x/', 'curl --user=[redacted] https://x/'],
    ['curl -U proxy:hunter2 https://x/', 'curl -U [redacted] https://x/'],
    ["curl -u 'user:hunter2 x' https://x/", 'curl -u [redacted] https://x/'],
    ['/usr/bin/curl -u user:hunter2 https://x/', '/usr/bin/curl -u [redacted] https://x/'],
    ['sudo -u www curl -u user:hunter2 x', 'sudo -u www curl -u [redacted] x'],
    ['timeout 5 curl -u user:hunter2 x', 'timeout 5 curl -u [redacted] x'],
    ['wget --password=hunter2 https://x/', 'wget --password=[redacted] https://x/'],
    ['wget --http-password hunter2 https://x/', 'wget --http-password [redacted] https://x/'],
    ['wget --password hunter2 https://x/', 'wget --password [redacted] https://x/'],
    ['mysql -u root -phunter2 shop', 'mysql -u root -p[redacted] shop'],
    ["mysql -u root -p'hunter2' shop", 'mysql -u root -p[redacted] shop'],
    ['mysql -u root -p shop', 'mysql -u root -p shop'],
    ['mysqldump --password=hunter2 shop', 'mysqldump --password=[redacted] shop'],
    ['sshpass -p hunter2 ssh -p 22 me@host', 'sshpass -p [redacted] ssh -p [redacted] me@host'],
    ['sshpass -phunter2 ssh me@host', 'sshpass -p[redacted] ssh me@host'],
    ['PGPASSWORD=hunter2 psql -h db -U app', 'PGPASSWORD=[redacted] psql -h db -U app'],
    ['PGPASSWORD="hunter2 x" psql', 'PGPASSWORD=[redacted] psql'],
    ['export MYSQL_PWD=hunter2; mysql', 'export MYSQL_PWD=[redacted]; mysql'],
    ['env GITHUB_TOKEN=ghp_x1 gh api /', 'env GITHUB_TOKEN=[redacted] gh api /'],
    ['psql postgresql://app:hunter2@db/shop', 'psql postgresql://[redacted]@db/shop'],
    ["psql 'host=db password=hunter2'", "psql 'host=db password=[redacted]'"],
    ['git clone https://a:hunter2@git.example/r', 'git clone https://[redacted]@git.example/r'],
    ['git clone https://ghp_abc@github.com/o/r', 'git clone https://[redacted]@github.com/o/r'],
    [
      "curl -H 'Authorization: Bearer eyJhbGciOi.x.y' https://x/",
      "curl -H 'Authorization: Bearer [redacted]' https://x/",
    ],
    [
      'curl --header "Authorization: Basic dXNlcjpodW50ZXIy" https://x/',
      "curl --header 'Authorization: Basic [redacted]' https://x/",
    ],
    ["curl -H 'X-Api-Key: hunter2' https://x/", "curl -H 'X-Api-Key: [redacted]' https://x/"],
    ["curl -H 'Cookie: sid=hunter2' https://x/", "curl -H 'Cookie: [redacted]' https://x/"],
    [
      "wget --header='Authorization: token hunter2' https://x/",
      "wget '--header=Authorization: token [redacted]' https://x/",
    ],
    ['curl "https://x/?api_key=hunter2&q=1"', "curl 'https://x/?api_key=[redacted]&q=1'"],
    ['redis-cli -a hunter2 ping', 'redis-cli -a [redacted] ping'],
    ['ldapsearch -D cn=admin -w hunter2 -b dc=x', 'ldapsearch -D cn=admin -w [redacted] -b dc=x'],
    ['openssl rsa -passin pass:hunter2 -in k', 'openssl rsa -passin pass:[redacted] -in k'],
    ["bash -c 'curl -u user:hunter2 https://x/'", "bash -c 'curl -u [redacted] https://x/'"],
    ["sh -ec 'mysql -phunter2'", "sh -ec 'mysql -p[redacted]'"],
    ["eval 'curl -u user:hunter2 x'", "eval 'curl -u [redacted] x'"],
    ['x=$(curl -u user:hunter2 x); echo $x', 'x=$(curl -u [redacted] x); echo $x'],
    ['echo "$(curl -u user:hunter2 x)"', "echo '$(curl -u [redacted] x)'"],
    ['true && curl -u user:hunter2 x | jq .', 'true && curl -u [redacted] x | jq .'],
    ['curl -u \\\nuser:hunter2 x', 'curl -u \\\n[redacted] x'],
  ])('redacts %j', (command, expected) => {
    const redacted = redactCommandCredentials(command);
    expect(redacted).toBe(expected);
    expect(redacted).not.toMatch(/hunter2|ghp_|eyJhbG|dXNlcjpo/);
  });

  it.each([
    'make test',
    'ls -la /scratch && echo rc=$?',
    'sort -u names.txt | uniq -c',
    "printf '%s\\n' hello",
    'mkdir -p /scratch/a/b',
    'ssh -p 22 git@github.com',
    'git clone git@github.com:org/repo.git',
    'curl -sS --max-time 10 http://127.0.0.1:8080/path?q=1',
  ])('leaves %j as written', (command) => {
    expect(redactCommandCredentials(command)).toBe(command);
  });

  it('keeps a command with a credential as a redacted preview and the digest of the exact text', () => {
    const command = 'curl -u admin:hunter2 https://api.example/';
    expect(argumentsForLog({ command, network: 'none' })).toEqual({
      command: {
        omitted: 'credentials redacted',
        preview: 'curl -u [redacted] https://api.example/',
        length: command.length,
        sha256: createHash('sha256').update(command).digest('hex'),
      },
      network: 'none',
    });
    expect(argumentsForLog({ command: 'make test' })).toEqual({ command: 'make test' });
    expect(JSON.stringify(argumentsForLog({ url: 'https://a:hunter2@host/' }))).not.toContain(
      'hunter2',
    );
  });
});

describe('outcomeSummary', () => {
  const digest = (text: string) => ({
    omitted: 'kept as a digest',
    length: text.length,
    sha256: createHash('sha256').update(text).digest('hex'),
  });

  it('keeps the allow-listed outcome fields as they are', () => {
    expect(
      outcomeSummary({
        exit_code: 0,
        signal: null,
        terminated: null,
        stdout_truncated: false,
        package: 'com.example.app',
        outcome: 'Success',
      }),
    ).toEqual({
      exit_code: 0,
      signal: null,
      terminated: null,
      stdout_truncated: false,
      package: 'com.example.app',
      outcome: 'Success',
    });
    expect(outcomeSummary('not an object')).toEqual({});
  });

  // Regression: every string of 200 characters or less was kept, so a command's output, a page's
  // text or an evaluate result landed in farm_audit whenever it was short.
  it('keeps what a command printed or a page said only as length and SHA-256, however short', () => {
    const summary = outcomeSummary({
      exit_code: 0,
      stdout: 'secret-42\n',
      stderr: '',
      text: 'Welcome',
      result: 42,
      url: 'https://example.test/?token=abc',
      title: 'Inbox',
      packages: ['com.a', 'com.b'],
    });
    expect(summary).toEqual({
      exit_code: 0,
      stdout: digest('secret-42\n'),
      stderr: digest(''),
      text: digest('Welcome'),
      result: digest('42'),
      url: digest('https://example.test/?token=abc'),
      title: digest('Inbox'),
      packages: digest('["com.a","com.b"]'),
    });
    expect(JSON.stringify(summary)).not.toMatch(/secret-42|Welcome|token=abc|Inbox/);
  });
});
