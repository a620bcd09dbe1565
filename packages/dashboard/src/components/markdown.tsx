// The small part of Markdown the assistant writes (docs/assistant.md): paragraphs, `-` lists,
// **bold**, `code` and [links](url). Built as React elements from text, never as HTML, so an
// answer cannot inject markup. Links: this dashboard's own (the assistant's "Data used" rows)
// open in place; other http(s) links open in a new tab; anything else stays text.
import type { ReactNode } from 'react';
import { followLink } from '../console/console-shell.tsx';

const INLINE = /\*\*([^*]+)\*\*|`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)/g;

function link(text: string, href: string, key: string): ReactNode {
  let url: URL;
  try {
    url = new URL(href, window.location.origin);
  } catch {
    return text;
  }
  if (url.origin === window.location.origin) {
    const path = `${url.pathname}${url.search}`;
    return (
      <a key={key} href={path} onClick={(event) => followLink(event, path)}>
        {text}
      </a>
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return text;
  return (
    <a key={key} href={url.href} target="_blank" rel="noopener noreferrer">
      {text}
    </a>
  );
}

function inline(text: string, prefix: string): ReactNode[] {
  const parts: ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) parts.push(text.slice(last, match.index));
    const key = `${prefix}-${match.index}`;
    if (match[1] !== undefined) parts.push(<strong key={key}>{match[1]}</strong>);
    else if (match[2] !== undefined) parts.push(<code key={key}>{match[2]}</code>);
    else parts.push(link(match[3] ?? '', match[4] ?? '', key));
    last = match.index + match[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

export function Markdown(props: { text: string }) {
  const blocks = props.text.split(/\n{2,}/);
  return (
    <>
      {blocks.map((block, index) => {
        const lines = block.split('\n');
        const key = `b${index}`;
        if (lines.every((line) => /^\s*[-*] /.test(line))) {
          return (
            <ul key={key}>
              {lines.map((line, item) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: static text, rendered once per answer
                <li key={item}>{inline(line.replace(/^\s*[-*] /, ''), `${key}-${item}`)}</li>
              ))}
            </ul>
          );
        }
        return (
          <p key={key} className="markdown-p">
            {inline(block, key)}
          </p>
        );
      })}
    </>
  );
}
