// The adb doubles read the command lines adb sends to a device's shell.
/**
 * Splits a command line as /system/bin/sh would for the quoting adb's escape_arg produces (single
 * quotes and backslashes): the words a phone's shell would run, for the adb doubles.
 */
export function splitShellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let index = 0; index < line.length; index++) {
    const char = line[index] as string;
    if (char === "'") {
      const end = line.indexOf("'", index + 1);
      if (end < 0) throw new Error('unterminated quote');
      word += line.slice(index + 1, end);
      inWord = true;
      index = end;
    } else if (char === '\\' && index + 1 < line.length) {
      word += line[++index];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}
