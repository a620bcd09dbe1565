// What a confirm-gated farm call shows a person and what binds it (001 §4.1 "every destructive
// tool is confirm-gated"; docs/farm.md "Gating"): the text of what would run with every
// character that could disguise it made visible, the farm host it names, and the canonical JSON
// whose SHA-256 ties an approval to the exact arguments (pending-actions.ts).
/**
 * Text a pending action shows a person (a command, a script, a URL) with every character that
 * could make it read as something else made visible: line breaks and other controls,
 * bidirectional overrides, zero-width and other format characters (Unicode TR36 §2,
 * CVE-2021-42574) become `\n`, `\t` or `\u{…}`. A command padded with newlines after a harmless
 * first line, or reversed by U+202E, would otherwise be approved as the part that was shown.
 */
export function shownText(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\\]/gu, (char) => {
    if (char === '\\') return '\\\\';
    if (char === '\n') return '\\n';
    if (char === '\t') return '\\t';
    return `\\u{${(char.codePointAt(0) ?? 0).toString(16).toUpperCase()}}`;
  });
}

/**
 * The farm host a pending action names: this tool server's `farm.hostName`, the name its devices
 * are attached under (farm_attached_devices.farm_host), not the machine's own hostname, which a
 * container or a renamed host would show instead.
 */
export function farmHostOf(farm: { hostName: string } | null | undefined): string {
  return farm?.hostName ?? 'this host';
}

/** JSON with object keys sorted at every level, so equal arguments hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
