// Credentials in a command line, redacted for the farm audit (docs/farm.md "The audit"): flags
// that take a password or token (`curl -u`, `--password`, `mysql -p…`, `sshpass -p`), credential
// assignments (`PGPASSWORD=…`), credential headers (`-H 'Authorization: …'`) and URL user
// information. It reads the shell's words (quotes, escapes, separators, command substitutions,
// `sh -c` and `eval` strings) but is no shell: a secret it cannot see as one (a password as a
// plain argument, on stdin, assembled by the script) stays, which docs/farm.md states.

const REDACTED = '[redacted]';

/** Short flags whose value is a credential, per program: in the same word or the next one. */
const SHORT_FLAGS: Record<string, string> = {
  curl: 'uU',
  sshpass: 'p',
  'redis-cli': 'a',
  smbclient: 'U',
  ldapsearch: 'w',
  ldapmodify: 'w',
  ldapadd: 'w',
  ldapdelete: 'w',
  ldapwhoami: 'w',
};

/** MySQL's `-p` takes its password only in the same word; `-p db` prompts, db being a database. */
const ATTACHED_SHORT_FLAGS: Record<string, string> = Object.fromEntries(
  ['mysql', 'mysqldump', 'mysqladmin', 'mysqlimport', 'mysqlcheck', 'mysqlshow', 'mariadb'].map(
    (program) => [program, 'p'],
  ),
);

/** Words that name a credential in a flag (`--http-password`, `--api-key`, `--proxy-user`). */
const SECRET_FLAG_WORDS =
  'password|passwd|pass|passphrase|pwd|secret|token|api-?key|bearer|user|credentials?';
/** Long flags whose value is a credential. */
const SECRET_LONG_FLAG = new RegExp(`^--(?:[a-z0-9]+-)*(?:${SECRET_FLAG_WORDS})$`, 'i');

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'busybox']);

/** Programs whose words are read with their own rules (flags above, `-c` strings, `eval`). */
const KNOWN_PROGRAMS = new Set([
  ...Object.keys(SHORT_FLAGS),
  ...Object.keys(ATTACHED_SHORT_FLAGS),
  ...SHELLS,
  'eval',
]);

/** How deep `sh -c`, `eval` and `$(…)` strings are read as commands of their own. */
const MAX_DEPTH = 3;

/** `scheme://user:password@` anywhere: the user information goes, whatever it holds. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#]*@/gi;
/** Words that name a credential in `name=value`. */
const SECRET_NAME_WORDS =
  'password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|' +
  'credentials?|auth';
/** A name that says credential: `PGPASSWORD`, `--password`, `api_key`, `GITHUB_TOKEN`, … */
const CREDENTIAL_NAME = `(?:-{1,2})?[a-z0-9_.-]*?(?:${SECRET_NAME_WORDS})[a-z0-9_.-]*`;
/** A whole word `name=value` (an assignment, `--password=…`): the value is the rest of it. */
const CREDENTIAL_WORD = new RegExp(`^(${CREDENTIAL_NAME})=.+$`, 'is');
/** `name=value` inside a word (conninfo, a query string): the value ends at a delimiter. */
const CREDENTIAL_PAIR = new RegExp(`(^|[\\s;&?,"'{(])(${CREDENTIAL_NAME})=([^\\s&;,"'})]+)`, 'gi');
/** Header names that carry a credential: `Authorization`, `Cookie`, `X-Api-Key`, … */
const HEADER_NAME =
  'proxy-authorization|authorization|cookie|' +
  '[a-z0-9-]*(?:token|secret|api-?key|password|session)[a-z0-9-]*';
const AUTH_SCHEME = 'basic|bearer|digest|token|negotiate|ntlm';
/** `Authorization: Bearer …` and other credential headers, as `-H` or `--header=` carries them. */
const CREDENTIAL_HEADER = new RegExp(
  `(^|=)(\\s*(?:${HEADER_NAME})\\s*:\\s*)(?:(${AUTH_SCHEME})\\s+)?\\S.*$`,
  'im',
);
/** OpenSSL's `-passin pass:…`. */
const OPENSSL_PASS = /(^|\s)pass:\S+/g;

/** Credentials recognisable in one word whatever the program. */
function redactInline(text: string): string {
  return text
    .replace(URL_USERINFO, `$1${REDACTED}@`)
    .replace(CREDENTIAL_WORD, `$1=${REDACTED}`)
    .replace(CREDENTIAL_PAIR, `$1$2=${REDACTED}`)
    .replace(CREDENTIAL_HEADER, (_all, lead: string, name: string, scheme?: string) =>
      scheme ? `${lead}${name}${scheme} ${REDACTED}` : `${lead}${name}${REDACTED}`,
    )
    .replace(OPENSSL_PASS, `$1pass:${REDACTED}`);
}

interface Word {
  start: number;
  end: number;
  /** The word as the shell would pass it: quotes removed, escapes applied. */
  value: string;
}

/** A command line as words, null marking where one simple command ends and another begins. */
function readWords(text: string): Array<Word | null> {
  const out: Array<Word | null> = [];
  let word: Word | null = null;
  const end = (at: number) => {
    if (word) out.push({ ...word, end: at });
    word = null;
  };
  const add = (at: number, chars: string) => {
    word ??= { start: at, end: at, value: '' };
    word.value += chars;
  };
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i] as string;
    if (char === ' ' || char === '\t') {
      end(i);
    } else if (';&|\n()`'.includes(char) || (char === '$' && text[i + 1] === '(')) {
      end(i);
      if (char === '$') i += 1;
      out.push(null);
    } else if (char === '\\') {
      if (text[i + 1] !== '\n') add(i, text[i + 1] ?? '');
      i += 1;
    } else if (char === "'" || (char === '$' && text[i + 1] === "'")) {
      const from = char === '$' ? i + 2 : i + 1;
      const close = text.indexOf("'", from);
      const stop = close < 0 ? text.length : close;
      add(i, text.slice(from, stop));
      i = stop;
    } else if (char === '"') {
      const start = i;
      let value = '';
      for (i += 1; i < text.length && text[i] !== '"'; i += 1) {
        if (text[i] === '\\' && '"\\$`\n'.includes(text[i + 1] ?? '')) i += 1;
        value += text[i] ?? '';
      }
      add(start, value);
    } else {
      add(i, char);
    }
  }
  end(text.length);
  return out;
}

const baseName = (path: string) => path.slice(path.lastIndexOf('/') + 1);

/**
 * The new value of each word of one simple command that holds a credential. A known program's
 * flag rules apply from its word on, whatever precedes it (`sudo`, `timeout 5`, `xargs`, `if`):
 * reading too much as a credential only redacts a harmless word of the preview.
 */
function redactSimpleCommand(words: Word[], depth: number): Map<Word, string> {
  const changed = new Map<Word, string>();
  const nested = depth < MAX_DEPTH;
  let program = '';
  let secretNext = false;
  let script = false;
  for (const word of words) {
    let value = word.value;
    if (secretNext) {
      value = REDACTED;
      secretNext = false;
    } else if ((script || program === 'eval') && nested) {
      value = redactAt(value, depth + 1);
      script = false;
    } else if (KNOWN_PROGRAMS.has(baseName(value))) {
      program = baseName(value);
    } else if (value.startsWith('--')) {
      const [name = '', ...rest] = value.split('=');
      if (SECRET_LONG_FLAG.test(name)) {
        if (rest.length > 0) value = `${name}=${REDACTED}`;
        else secretNext = true;
      }
    } else if (/^-[A-Za-z]/.test(value)) {
      // A cluster (`-sSu`): the first credential letter takes the rest of the word or the next.
      script = SHELLS.has(program) && value.includes('c');
      const letters = (SHORT_FLAGS[program] ?? '') + (ATTACHED_SHORT_FLAGS[program] ?? '');
      const flag = [...value.slice(1)].findIndex((letter) => letters.includes(letter)) + 1;
      if (flag > 0 && flag < value.length - 1) value = `${value.slice(0, flag + 1)}${REDACTED}`;
      else if (flag > 0) secretNext = (SHORT_FLAGS[program] ?? '').includes(value[flag] ?? '');
    } else if ((value.includes('$(') || value.includes('`')) && nested) {
      // A command substitution inside double quotes is a command of its own.
      value = redactAt(value, depth + 1);
    }
    value = redactInline(value);
    if (value !== word.value) changed.set(word, value);
  }
  return changed;
}

/** A redacted value written back as one shell word (single-quoted when it needs quoting). */
function quoteWord(value: string): string {
  return /^[\w@%+=:,./[\]-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The command line (read `depth` strings deep) with its credentials redacted. */
function redactAt(command: string, depth: number): string {
  const words = readWords(command);
  const changed = new Map<Word, string>();
  let simple: Word[] = [];
  for (const word of [...words, null]) {
    if (word) {
      simple.push(word);
      continue;
    }
    for (const [key, value] of redactSimpleCommand(simple, depth)) changed.set(key, value);
    simple = [];
  }
  let out = command;
  for (const word of [...changed.keys()].sort((a, b) => b.start - a.start)) {
    const written = quoteWord(changed.get(word) as string);
    out = `${out.slice(0, word.start)}${written}${out.slice(word.end)}`;
  }
  return out;
}

/**
 * The command line with every credential it recognisably carries replaced by `[redacted]`;
 * words without one are kept exactly as written.
 */
export function redactCommandCredentials(command: string): string {
  return redactAt(command, 0);
}
