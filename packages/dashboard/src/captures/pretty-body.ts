// Captured body text pretty-printed by content type: JSON indented, form data one pair a line,
// markup one tag a line, anything else as is.

export function prettyBody(text: string, contentType: string): { kind: string; text: string } {
  const type = contentType.toLowerCase();
  if (type.includes('json') || /^\s*[[{]/.test(text)) {
    try {
      return { kind: 'json', text: JSON.stringify(JSON.parse(text), null, 2) };
    } catch {
      // Not JSON after all: shown as text.
    }
  }
  if (type.includes('x-www-form-urlencoded')) {
    return {
      kind: 'form',
      text: [...new URLSearchParams(text)].map(([name, value]) => `${name} = ${value}`).join('\n'),
    };
  }
  if (type.includes('xml') || type.includes('html')) {
    return { kind: 'markup', text: text.replace(/>\s*</g, '>\n<') };
  }
  return { kind: 'text', text };
}
