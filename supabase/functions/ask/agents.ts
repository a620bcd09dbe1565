// Specialist agents (001 §2.2 assistant_agents: slug, label, instructions, model): the registry
// rows the caller can see (RLS: shared rows with services:view, plus their own) and the routing
// rule. A question naming an agent as `@slug` goes to it; otherwise the agent whose slug or label
// words (4+ letters) the question uses most; none matching, the general assistant answers with
// ASSISTANT_MODEL. The chosen agent adds its instructions and its model.
import { type CallerClient, dataOf } from './data-api.ts';

export interface SpecialistAgent {
  slug: string;
  label: string;
  instructions: string;
  model: string;
}

export async function loadAgents(
  db: CallerClient,
  signal: AbortSignal,
): Promise<SpecialistAgent[]> {
  try {
    return dataOf(
      await db
        .from('assistant_agents')
        .select('slug, label, instructions, model')
        .eq('enabled', true)
        // The caller's own agents after the shared ones: a shared slug wins a tie.
        .order('owner_user_id', { ascending: true, nullsFirst: true })
        .order('slug')
        .limit(100)
        .abortSignal(signal),
    ) as SpecialistAgent[];
  } catch {
    // The registry is an enhancement: without it (or without services:view) the general
    // assistant still answers. An abort (client gone, time cap) also lands here: the caller
    // checks the signal next, so an abort ends the question as aborted rather than as a throw.
    return [];
  }
}

function wordsOf(text: string): string[] {
  return text.toLowerCase().split(/[^a-z0-9]+/).filter((word) => word.length >= 4);
}

export function chooseAgent(
  question: string,
  agents: readonly SpecialistAgent[],
): SpecialistAgent | undefined {
  const mention = /(?:^|\s)@([a-z0-9][a-z0-9-]{0,62})\b/.exec(question.toLowerCase());
  if (mention) {
    const named = agents.find((agent) => agent.slug === mention[1]);
    if (named) return named;
  }
  const asked = new Set(wordsOf(question));
  let best: SpecialistAgent | undefined;
  let bestScore = 0;
  for (const agent of agents) {
    const score = [...new Set([...wordsOf(agent.slug), ...wordsOf(agent.label)])].filter((word) =>
      asked.has(word)
    ).length;
    if (score > bestScore) {
      best = agent;
      bestScore = score;
    }
  }
  return best;
}
