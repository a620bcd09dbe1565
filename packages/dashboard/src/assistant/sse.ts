// A text/event-stream reader (WHATWG HTML §9.2 "Server-sent events", the parts the assistant
// uses): `event:` and `data:` fields, events ended by a blank line, `:` comment lines (the
// function's pings) ignored, CRLF/CR/LF line ends. EventSource cannot POST, hence this.

export type ServerEvent = { event: string; data: string };

export class SseParser {
  #buffer = '';
  #event = '';
  #data: string[] = [];

  /** Feeds decoded text; returns the events it completed. */
  push(chunk: string): ServerEvent[] {
    this.#buffer += chunk;
    const events: ServerEvent[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.#buffer);
      // A lone CR at the end may be the first half of CRLF: wait for more.
      if (!match || (match[0] === '\r' && match.index === this.#buffer.length - 1)) break;
      const line = this.#buffer.slice(0, match.index);
      this.#buffer = this.#buffer.slice(match.index + match[0].length);
      if (line === '') {
        if (this.#data.length > 0)
          events.push({ event: this.#event || 'message', data: this.#data.join('\n') });
        this.#event = '';
        this.#data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') this.#event = value;
      else if (field === 'data') this.#data.push(value);
    }
    return events;
  }
}
