// The small part of Markdown the assistant writes (docs/assistant.md): paragraphs, `-` lists,
// **bold**, `code` and [links](url). Built as React elements from text, never as HTML, so an
// answer cannot inject markup. Links (link-target.ts): this dashboard's own routes open in place,
// with the href rebuilt from the parsed route; other http(s) links open in a new tab; anything
// else stays text.
import type { ReactNode } from 'react';
import { followLink } from '../console/console-shell.tsx';
import { linkTarget } from './link-target.ts';

const INLINE = /\*\*([^*]+)\*\*|`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)/g;

function link(text: string, destination: string, key: string): ReactNode {
  const target = linkTarget(destination, window.location.origin);
  if (target?.kind === 'route') {
    return (
      <a key={key} href={target.path} onClick={(event) => followLink(event, target.path)}>
        {text}
      </a>
    );
  }
  if (target?.kind === 'external') {
    return (
      <a key={key} href={target.href} target="_blank" rel="noopener noreferrer">
        {text}
      </a>
    );
  }
  return text;
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
