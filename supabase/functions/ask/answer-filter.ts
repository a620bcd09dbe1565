// The answer on its way out (001 §4.3, OWASP LLM02/LLM05): the model's text is redacted again by
// the shared module, and links are filtered: only the dashboard's own routes and the provider's
// url_citation annotations stay links, written as the policy answers them (a dashboard route
// rebuilt from its parse, never the model's spelling); other links lose their URL, images are
// never rendered (EchoLeak-style exfiltration through auto-fetched images), bare URLs become
// inline code and raw HTML is escaped. Streaming emits only whole lines (or long runs ending at
// whitespace), after the same redaction of everything so far, so a secret split across deltas is
// never emitted.

/** The URL a link is written with, or null when it may not stay a link. */
export type LinkTarget = (url: string) => string | null;

export interface AnswerFilterOptions {
  redact: (text: string) => Promise<string>;
  /** Dashboard routes (dashboard-links.ts) and cited sources; null for anything else. */
  linkTarget: LinkTarget;
}

/** A long run without a newline is flushed at its last whitespace past this many characters. */
const RUN_FLUSH_CHARS = 240;

const IMAGE = /!\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"\n]*")?\s*\)/g;
const LINK = /\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"\n]*")?\s*\)/g;
// GFM also autolinks `www.` hosts without a scheme, and after `_`, `*`, `~` or `(` as after a space
// (GFM 0.29 §6.9), so no word boundary is required here.
const BARE_URL = /(?<![A-Za-z0-9])(?:(?:https?|ftp):\/\/|www\.)[^\s<>()`"'\]]+/gi;
const HTML_TAG = /<(\/?[a-zA-Z][^<>\n]*)>/g;
// What HTML_TAG leaves: a tag spread over lines or not closed yet, a comment, a declaration.
const HTML_OPEN = /<(?=[a-zA-Z/!?])/g;
// CommonMark makes a link or an image only where a label's `]` is followed at once by `(` (an
// inline link) or `:` (a reference definition, which reference-style links and images need), so
// once the allowed links are set aside, escaping every such unescaped `]` leaves no other link or
// image, whatever form its destination (`//host`, `http:host`, `<… …>`, entities) or title
// (`'…'`, `(…)`) takes, over lines or with nested brackets (CommonMark 0.31 §4.7, §6.3, §6.4).
const LINK_CLOSER = /(?<!\\)((?:\\\\)*)\](?=[(:])/g;

/**
 * Applies `map` to the text outside fenced code blocks (whose lines are shown as they are, so
 * `a[1:]:` or `i<n` in code keep their look). Only a fence opened at the start of a line counts:
 * one indented under a list item or a quote ends with its container, which this does not track, so
 * such text is treated as prose (escaped: safe, if less pretty). Text with a carriage return is
 * all prose, as CommonMark ends lines there too (0.31 §4.5, §2.1).
 */
function outsideFences(text: string, map: (prose: string) => string): string {
  if (text.includes('\r')) return map(text);
  const out: string[] = [];
  let prose: string[] = [];
  let fence: { char: string; length: number } | null = null;
  const flush = () => {
    if (prose.length > 0) out.push(map(prose.join('\n')));
    prose = [];
  };
  for (const line of text.split('\n')) {
    if (fence) {
      out.push(line);
      const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(line)?.[1];
      if (close && close[0] === fence.char && close.length >= fence.length) fence = null;
      continue;
    }
    const open = /^(`{3,}|~{3,})(.*)$/.exec(line);
    const marker = open?.[1];
    // A backtick fence's info string may not hold a backtick (then it is no fence).
    if (marker && !(marker[0] === '`' && open?.[2]?.includes('`'))) {
      flush();
      out.push(line);
      fence = { char: marker[0] as string, length: marker.length };
      continue;
    }
    prose.push(line);
  }
  flush();
  return out.join('\n');
}

/** Sentence punctuation a bare URL usually ends on, which is not part of it. */
const TRAILING_PUNCTUATION = /[.,;:!?]+$/;

/** Applies the link policy to complete markdown. */
export function filterLinks(text: string, linkTarget: LinkTarget): string {
  const kept: string[] = [];
  const keep = (markdown: string) => {
    kept.push(markdown);
    return `\uE000${kept.length - 1}\uE000`;
  };
  let out = text.replace(/\uE000/g, '');
  out = out.replace(IMAGE, (_all, alt: string) => (alt ? `(image: ${alt})` : '(image)'));
  out = out.replace(LINK, (_all, label: string, url: string) => {
    const target = linkTarget(url);
    // The label is prose like any other: no raw HTML inside a kept link either.
    if (target !== null) return keep(`[${label.replace(/</g, '&lt;')}](${target})`);
    return label || url.replace(/^\w+:\/\//, '');
  });
  out = out.replace(BARE_URL, (url) => {
    const tail = TRAILING_PUNCTUATION.exec(url)?.[0] ?? '';
    const target = linkTarget(url.slice(0, url.length - tail.length));
    return target === null ? `\`${url}\`` : keep(target) + tail;
  });
  out = out.replace(HTML_TAG, (_all, inner: string) => `&lt;${inner}&gt;`);
  out = outsideFences(
    out,
    (prose) => prose.replace(HTML_OPEN, '&lt;').replace(LINK_CLOSER, '$1\\]'),
  );
  return out.replace(/\uE000(\d+)\uE000/g, (_all, index: string) => kept[Number(index)] ?? '');
}

/** Where the raw text may be cut for emission: never inside a PEM block or an open link. */
function commitPoint(raw: string, from: number): number {
  let point = raw.lastIndexOf('\n') + 1;
  if (point <= from && raw.length - from > RUN_FLUSH_CHARS) {
    const tail = raw.slice(from);
    const space = Math.max(tail.lastIndexOf(' '), tail.lastIndexOf('\t'));
    const candidate = space > 0 ? from + space + 1 : from;
    const cut = raw.slice(from, candidate);
    // An unclosed [ or ( on the run could be half a link whose URL is still to come.
    const open = (cut.match(/[[(]/g)?.length ?? 0) > (cut.match(/[\])]/g)?.length ?? 0);
    if (!open) point = candidate;
  }
  const head = raw.slice(0, point);
  const begin = head.lastIndexOf('-----BEGIN');
  if (begin >= 0 && head.indexOf('-----END', begin) < 0) point = head.lastIndexOf('\n', begin) + 1;
  return point;
}

export interface AnswerFilter {
  /** Adds model text; returns what may be emitted now ('' when nothing yet). */
  push(delta: string): Promise<string>;
  /** The complete filtered answer with `footer` and the rest still to emit (none if diverged). */
  finish(footer: string): Promise<{ answer: string; rest: string }>;
}

export function createAnswerFilter(options: AnswerFilterOptions): AnswerFilter {
  let raw = '';
  let committed = 0;
  let emitted = '';
  // Once the filtered prefix disagrees with what was sent (a citation arriving late, a secret
  // only recognisable whole), no more deltas are sent: done{answer} carries the whole answer.
  let diverged = false;
  const clean = async (text: string) => filterLinks(await options.redact(text), options.linkTarget);
  return {
    async push(delta) {
      raw += delta;
      if (diverged) return '';
      const point = commitPoint(raw, committed);
      if (point <= committed) return '';
      committed = point;
      const filtered = await clean(raw.slice(0, point));
      if (!filtered.startsWith(emitted)) {
        diverged = true;
        return '';
      }
      const out = filtered.slice(emitted.length);
      emitted = filtered;
      return out;
    },
    async finish(footer) {
      const answer = (await clean(raw)) + footer;
      const rest = !diverged && answer.startsWith(emitted) ? answer.slice(emitted.length) : '';
      return { answer, rest };
    },
  };
}
