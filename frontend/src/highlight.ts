// Search words in text: where they are (ranges), and text split into text
// nodes and <mark>s. The list's titles and snippets and the transcript's
// messages use the same matching.

export type Range = [start: number, end: number];

/** queryWords are the words of a search, lower-cased, quotes trimmed. */
export function queryWords(query: string): string[] {
  return query
    .split(/\s+/)
    .map((w) => w.replace(/^["']+|["'*]+$/g, '').toLowerCase())
    .filter((w) => w.length > 0);
}

/** matchRanges finds every occurrence of the words in text (case-insensitive,
 * the longest word first where two start at the same place). */
export function matchRanges(text: string, words: string[]): Range[] {
  const lower = text.toLowerCase();
  const out: Range[] = [];
  let i = 0;
  while (i < text.length && words.length > 0) {
    let best = -1;
    let len = 0;
    for (const w of words) {
      const at = lower.indexOf(w, i);
      if (at >= 0 && (best < 0 || at < best || (at === best && w.length > len))) {
        best = at;
        len = w.length;
      }
    }
    if (best < 0) break;
    out.push([best, best + len]);
    i = best + len;
  }
  return out;
}

/** markRanges splits text into text nodes and <mark>s over the ranges
 * (sorted, not overlapping, e.g. the server's highlight offsets). */
export function markRanges(text: string, ranges: Range[]): Node[] {
  const out: Node[] = [];
  let i = 0;
  for (const [start, end] of ranges) {
    if (start < i || end <= start || end > text.length) continue;
    if (start > i) out.push(document.createTextNode(text.slice(i, start)));
    const m = document.createElement('mark');
    m.textContent = text.slice(start, end);
    out.push(m);
    i = end;
  }
  if (i < text.length || out.length === 0) out.push(document.createTextNode(text.slice(i)));
  return out;
}

/** highlight splits text into text nodes and <mark>s for the query's words. */
export function highlight(text: string, query: string): Node[] {
  return markRanges(text, matchRanges(text, queryWords(query)));
}
