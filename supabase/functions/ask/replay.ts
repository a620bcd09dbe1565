// The model's output items as the next step's input, under store:false (nothing is kept by the
// provider, so nothing can be referenced by id). The Responses API pairs a function call with its
// output by `call_id`, not by the item id; an item id is only needed beside the reasoning item it
// belongs to. So (research notes Part B §B1; OpenAI's store:false guidance):
// - a response whose reasoning items all came back with `encrypted_content` (requested with
//   `include: ["reasoning.encrypted_content"]`) is passed back in full, in order, ids and all:
//   reasoning models then keep their reasoning across tool calls;
// - any other response is passed back without server ids: reasoning items the provider could not
//   resolve ("Item with id 'rs_…' not found") are left out, and so are the ids of the items that
//   followed them ("Item 'fc_…' … was provided without its required 'reasoning' item");
// - web_search_call items are never passed back: the tool is gone by the time anything is
//   replayed (untrusted-sources.ts), and an id-less one is not a valid input item.
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import type OpenAI from 'npm:openai@7.55.0';
import type { InputItem } from './instructions.ts';

type OutputItem = OpenAI.Responses.ResponseOutputItem;

/** What to ask for so that a reasoning model's items can be replayed under store:false. */
export const ENCRYPTED_REASONING = 'reasoning.encrypted_content' as const;

/** Whether the output came from a reasoning model (it then needs ENCRYPTED_REASONING). */
export function hasReasoning(items: readonly OutputItem[]): boolean {
  return items.some((item) => item.type === 'reasoning');
}

export function replayItems(items: readonly OutputItem[]): InputItem[] {
  const reasoning = items.filter((item) => item.type === 'reasoning');
  const inFull = reasoning.length > 0 &&
    reasoning.every((item) => typeof item.encrypted_content === 'string') &&
    !items.some((item) => item.type === 'web_search_call');
  if (inFull) return items.map((item) => item as InputItem);
  const replay: InputItem[] = [];
  for (const item of items) {
    if (item.type === 'function_call') {
      replay.push({
        type: 'function_call',
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments,
      });
    } else if (item.type === 'message') {
      const text = item.content
        .map((part) => (part.type === 'output_text' ? part.text : part.refusal))
        .join('');
      if (text) replay.push({ role: 'assistant', content: text });
    }
  }
  return replay;
}
